package io.kvstore.ffm.ucx;

import java.lang.foreign.MemorySegment;

/** A peer's remote key unpacked on one endpoint; grants put/get on the memory it was packed for. */
public final class RemoteKey implements AutoCloseable {

    private final Ucp ucp;
    private final MemorySegment handle;

    RemoteKey(Ucp ucp, MemorySegment handle) {
        this.ucp = ucp;
        this.handle = handle;
    }

    MemorySegment handle() {
        return handle;
    }

    @Override
    public void close() {
        try {
            ucp.rkeyDestroy.invokeExact(handle);
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_rkey_destroy", t);
        }
    }
}
