package io.kvstore.ffm.cuda;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A CUDA event: a marker recorded into a stream that completes when the work queued before it has,
 * used to wait for one copy without draining the whole stream and to time copies on the device.
 */
public final class CudaEvent implements AutoCloseable {

    private final CudaRuntime cuda;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaEvent(CudaRuntime cuda, MemorySegment handle) {
        this.cuda = cuda;
        this.handle = handle;
    }

    MemorySegment handle() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
        return handle;
    }

    /** Records this event at the current end of {@code stream}. */
    public void record(CudaStream stream) {
        cuda.record(this, stream);
    }

    /** Waits until the work recorded before this event has finished. */
    public void synchronize() {
        cuda.synchronize(this);
    }

    /** Whether the work recorded before this event has finished, without waiting. */
    public boolean isComplete() {
        return cuda.isComplete(this);
    }

    /** Milliseconds between {@code start} and this event, both recorded and complete, timed on the device. */
    public float millisSince(CudaEvent start) {
        return cuda.elapsedMillis(start, this);
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
        return "event 0x" + Long.toHexString(handle.address());
    }
}
