package io.kvstore.tier.device;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.cuda.CudaRuntime;
import io.kvstore.ffm.cuda.CudaRuntime.CopyKind;
import io.kvstore.ffm.cuda.CudaStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

/**
 * Device memory from {@code cudaMalloc} on one GPU, copied with {@code cudaMemcpyAsync} on streams of
 * its own (one per concurrent copy, from a small pool, each synchronised before the call returns), so
 * the tier's copies never queue behind an engine's kernels on the default stream. Host memory that is
 * pinned (the {@code cuda-pinned} DRAM tier) copies at full PCIe speed; pageable memory is staged by the
 * driver. Not verified on a GPU in this project's CI (no GPU there): see the README's status row.
 */
public final class CudaDeviceCopier implements DeviceCopier {

    public static final String NAME = "cuda-device";
    /** Copies that may run at once; further callers wait for a stream. */
    private static final int STREAMS = 4;

    private final CudaRuntime cuda;
    private final int device;
    private final MemorySegment region;
    private final BlockingQueue<CudaStream> streams = new ArrayBlockingQueue<>(STREAMS);
    private final List<CudaStream> allStreams = new ArrayList<>();

    /** Whether CUDA is usable here with at least one device, or why not. */
    public static Availability availability() {
        Availability runtime = CudaRuntime.availability();
        if (!runtime.available()) {
            return runtime;
        }
        try {
            int count = CudaRuntime.get().deviceCount();
            return count > 0
                    ? Availability.available(runtime.detail() + ", " + count + " device(s)")
                    : Availability.unavailable("libcudart loaded (" + runtime.detail() + ") but no CUDA device");
        } catch (RuntimeException e) {
            return Availability.unavailable("libcudart loaded but cudaGetDeviceCount failed: " + e.getMessage());
        }
    }

    /**
     * Allocates {@code bytes} of device memory on {@code device}.
     *
     * @throws IllegalStateException when CUDA or the device is unavailable, or the allocation fails
     */
    public CudaDeviceCopier(int device, long bytes) {
        Availability a = availability();
        if (!a.available()) {
            throw new IllegalStateException("cuda-device memory is unavailable: " + a.detail());
        }
        this.cuda = CudaRuntime.get();
        this.device = device;
        cuda.setDevice(device);
        this.region = cuda.malloc(bytes);
        try {
            for (int i = 0; i < STREAMS; i++) {
                CudaStream s = cuda.createStream(CudaRuntime.STREAM_NON_BLOCKING);
                allStreams.add(s);
                streams.add(s);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean emulated() {
        return false;
    }

    @Override
    public long capacityBytes() {
        return region.byteSize();
    }

    @Override
    public MemorySegment region() {
        return region;
    }

    @Override
    public void toDevice(MemorySegment source, long deviceOffset) {
        copy(region.asSlice(deviceOffset, source.byteSize()), source, CopyKind.HOST_TO_DEVICE);
    }

    @Override
    public void toHost(long deviceOffset, MemorySegment target) {
        copy(target, region.asSlice(deviceOffset, target.byteSize()), CopyKind.DEVICE_TO_HOST);
    }

    private void copy(MemorySegment target, MemorySegment source, CopyKind kind) {
        CudaStream stream;
        try {
            stream = streams.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for a CUDA stream", e);
        }
        try {
            cuda.setDevice(device); // the current device is per thread
            cuda.memcpyAsync(target, source, source.byteSize(), kind, stream);
            stream.synchronize();
        } finally {
            streams.add(stream);
        }
    }

    @Override
    public void close() {
        allStreams.forEach(CudaStream::close);
        allStreams.clear();
        cuda.free(region);
    }
}
