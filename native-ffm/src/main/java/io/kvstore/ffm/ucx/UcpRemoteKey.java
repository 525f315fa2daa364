package io.kvstore.ffm.ucx;

import java.lang.foreign.MemorySegment;

/** A peer's memory key unpacked for one endpoint ({@code ucp_rkey_h}); close destroys it. */
public final class UcpRemoteKey implements AutoCloseable {

    private final MemorySegment handle;
    private boolean closed;

    UcpRemoteKey(MemorySegment handle) {
        this.handle = handle;
    }

    MemorySegment handle() {
        if (closed) {
            throw new IllegalStateException("remote key is destroyed");
        }
        return handle;
    }

    /** {@code ucp_rkey_destroy}. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            Ucp.h().rkeyDestroy.invokeExact(handle);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }
}
