package io.kvstore.ffm.ucx;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.MemorySegment;

/** A peer's memory key unpacked for one endpoint ({@code ucp_rkey_h}); close destroys it. */
public final class UcpRemoteKey extends NativeHandle {

    UcpRemoteKey(MemorySegment handle) {
        super(handle);
    }

    MemorySegment handle() {
        return live();
    }

    /** {@code ucp_rkey_destroy}. */
    @Override
    protected void release(MemorySegment handle) {
        try {
            Ucp.h().rkeyDestroy.invokeExact(handle);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return "UCP remote key 0x" + Long.toHexString(handleAddress());
    }
}
