package io.kvstore.ffm.cuda;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.MemorySegment;

/**
 * A CUDA event: a marker recorded into a stream that completes when the work queued before it has,
 * used to wait for one copy without draining the whole stream and to time copies on the device.
 */
public final class CudaEvent extends NativeHandle {

    private final CudaRuntime cuda;

    CudaEvent(CudaRuntime cuda, MemorySegment handle) {
        super(handle);
        this.cuda = cuda;
    }

    MemorySegment handle() {
        return live();
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
    protected void release(MemorySegment handle) {
        cuda.destroyEvent(handle, toString());
    }

    @Override
    public String toString() {
        return "event 0x" + Long.toHexString(handleAddress());
    }
}
