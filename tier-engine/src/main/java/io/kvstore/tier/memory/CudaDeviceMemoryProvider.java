package io.kvstore.tier.memory;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.cuda.CudaRuntime;

/**
 * GPU memory from {@code cudaMalloc}, for an HBM tier whose blocks move only by CUDA copies and NIXL.
 * Java must never touch it directly, so {@link #hostAccessible()} is false and the CPU-copying
 * {@link MemoryTier} refuses it.
 */
public final class CudaDeviceMemoryProvider implements MemoryProvider {

    public static final String NAME = "cuda-device";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Availability availability() {
        return CudaRuntime.availability();
    }

    @Override
    public boolean hostAccessible() {
        return false;
    }

    @Override
    public MemoryRegion allocate(long bytes) {
        if (!availability().available()) {
            throw new IllegalStateException(
                    "cuda-device memory is unavailable: " + availability().detail());
        }
        CudaRuntime cuda = CudaRuntime.get();
        var segment = cuda.malloc(bytes);
        return new MemoryRegion(segment, NAME, true, () -> cuda.free(segment));
    }
}
