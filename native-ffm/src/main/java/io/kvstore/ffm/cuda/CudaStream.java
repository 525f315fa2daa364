package io.kvstore.ffm.cuda;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A CUDA stream: an ordered queue of copies on one device. Copies queued on different streams may
 * overlap, which is how a tier moves several blocks to and from the GPU at once. Closing destroys it.
 */
public final class CudaStream implements AutoCloseable {

    private final CudaRuntime cuda;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaStream(CudaRuntime cuda, MemorySegment handle) {
        this.cuda = cuda;
        this.handle = handle;
    }

    MemorySegment handle() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
        return handle;
    }

    /** Waits until everything queued on this stream has finished. */
    public void synchronize() {
        cuda.synchronize(this);
    }

    /** Whether everything queued so far has finished, without waiting. */
    public boolean isIdle() {
        return cuda.isIdle(this);
    }

    @Override
    public void close() {
        if (!closed.get()) {
            cuda.destroy(this);
            closed.set(true);
        }
    }

    @Override
    public String toString() {
        return "stream 0x" + Long.toHexString(handle.address());
    }
}
