package io.kvstore.ffm.cuda;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.MemorySegment;

/**
 * A CUDA stream: an ordered queue of copies on one device. Copies queued on different streams may
 * overlap, which is how a tier moves several blocks to and from the GPU at once. Closing destroys it.
 */
public final class CudaStream extends NativeHandle {

    private final CudaRuntime cuda;

    CudaStream(CudaRuntime cuda, MemorySegment handle) {
        super(handle);
        this.cuda = cuda;
    }

    MemorySegment handle() {
        return live();
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
    protected void release(MemorySegment handle) {
        cuda.destroyStream(handle, toString());
    }

    @Override
    public String toString() {
        return "stream 0x" + Long.toHexString(handleAddress());
    }
}
