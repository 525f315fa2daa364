package io.kvstore.tier.device;

import java.lang.foreign.MemorySegment;

/**
 * The copies a {@link DeviceTier} needs from device memory, and nothing else: one region of device
 * memory allocated up front, and synchronous copies between a span of it and host memory. Everything
 * the tier decides (slots, residency, checksums) is written against this interface, so it is tested on
 * CPU with {@link EmulatedDeviceCopier}; {@link CudaDeviceCopier} makes the same calls with
 * {@code cudaMalloc} and {@code cudaMemcpyAsync} on its own streams.
 */
public interface DeviceCopier extends AutoCloseable {

    /** The provider name shown for the tier ({@code cuda-device} or {@code emulated-device}). */
    String name();

    /** Whether this is host memory standing in for a GPU (tests and demos), labelled wherever shown. */
    boolean emulated();

    /** The device region's size in bytes. */
    long capacityBytes();

    /** The device region itself, for registration with a transfer engine (NIXL {@code VRAM_SEG}). */
    MemorySegment region();

    /** Copies {@code source} (host memory) to the device region at {@code deviceOffset}; returns once done. */
    void toDevice(MemorySegment source, long deviceOffset);

    /** Copies {@code target.byteSize()} bytes at {@code deviceOffset} of the device region into host memory. */
    void toHost(long deviceOffset, MemorySegment target);

    /** Frees the device region and the copier's streams. */
    @Override
    void close();
}
