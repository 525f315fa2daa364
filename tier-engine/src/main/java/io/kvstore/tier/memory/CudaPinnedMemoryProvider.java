package io.kvstore.tier.memory;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.cuda.CudaRuntime;

/**
 * Page-locked host memory from {@code cudaHostAlloc}: the CPU reads and writes it like any host memory,
 * and GPUs and NICs reach it by DMA without a staging copy, which is what the DRAM tier wants on a GPU
 * node. Available only where the CUDA runtime and a device are.
 */
public final class CudaPinnedMemoryProvider implements MemoryProvider {

    public static final String NAME = "cuda-pinned";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Availability availability() {
        return CudaRuntime.availability();
    }

    @Override
    public MemoryRegion allocate(long bytes) {
        if (!availability().available()) {
            throw new IllegalStateException(
                    "cuda-pinned memory is unavailable: " + availability().detail());
        }
        CudaRuntime cuda = CudaRuntime.get();
        var segment = cuda.hostAlloc(bytes, CudaRuntime.HOST_ALLOC_PORTABLE_MAPPED);
        return new MemoryRegion(segment, NAME, true, () -> cuda.freeHost(segment));
    }
}
