package io.kvstore.ffm.nixl;

/**
 * One entry of a NIXL descriptor list: {@code length} bytes at {@code address} on {@code deviceId}
 * (GPU ordinal for VRAM, 0 for DRAM, file descriptor for FILE segments).
 */
public record NixlDescriptor(long address, long length, long deviceId) {

    public NixlDescriptor {
        if (length <= 0) {
            throw new IllegalArgumentException("NIXL descriptor length must be positive, got " + length);
        }
    }
}
