package io.kvstore.transfer;

/**
 * A region of a peer's registered memory, as the peer published it: its address in the peer's
 * address space, its length and the key that grants access.
 */
public record RemoteRegion(long address, long length, byte[] remoteKey) {

    public RemoteRegion {
        if (length <= 0) {
            throw new IllegalArgumentException("region length must be positive, got " + length);
        }
        remoteKey = remoteKey.clone();
    }

    @Override
    public byte[] remoteKey() {
        return remoteKey.clone();
    }
}
