package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.kvstore.ffm.libc.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A connection to a peer worker ({@code ucp_ep_h}). Calls return UCX's {@code ucs_status_ptr_t}
 * unchanged (see {@link UcpStatus}): NULL when the operation completed at once, an error code, or a
 * request whose callback fires from {@link UcpWorker#progress()} and that must then be freed.
 * Only the worker's owner thread may use an endpoint.
 */
public final class UcpEndpoint {

    private final UcpWorker worker;
    private final MemorySegment handle;
    private final boolean owned;

    UcpEndpoint(UcpWorker worker, MemorySegment handle, boolean owned) {
        this.worker = worker;
        this.handle = handle;
        this.owned = owned;
    }

    /** {@code ucp_put_nbx} of all of {@code local} to {@code remoteAddress}. */
    public MemorySegment put(
            MemorySegment local, long remoteAddress, UcpRemoteKey key, MemorySegment callbackStub, long userData) {
        try {
            return (MemorySegment) Ucp.h()
                    .putNbx
                    .invokeExact(
                            handle,
                            local,
                            local.byteSize(),
                            remoteAddress,
                            key.handle(),
                            worker.requestParam(0, callbackStub, userData));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_get_nbx} of {@code local.byteSize()} bytes from {@code remoteAddress} into {@code local}. */
    public MemorySegment get(
            MemorySegment local, long remoteAddress, UcpRemoteKey key, MemorySegment callbackStub, long userData) {
        try {
            return (MemorySegment) Ucp.h()
                    .getNbx
                    .invokeExact(
                            handle,
                            local,
                            local.byteSize(),
                            remoteAddress,
                            key.handle(),
                            worker.requestParam(0, callbackStub, userData));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /**
     * {@code ucp_am_send_nbx}. The header and data must stay valid until the request completes
     * (UCX 1.13 does not copy the header of a pending send).
     */
    public MemorySegment amSend(
            int id, MemorySegment header, MemorySegment data, int flags, MemorySegment callbackStub, long userData) {
        try {
            return (MemorySegment) Ucp.h()
                    .amSendNbx
                    .invokeExact(
                            handle,
                            id,
                            header,
                            header.byteSize(),
                            data,
                            data.byteSize(),
                            worker.requestParam(flags, callbackStub, userData));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_ep_flush_nbx}: completes when every operation posted so far is remotely complete. */
    public MemorySegment flush(MemorySegment callbackStub, long userData) {
        try {
            return (MemorySegment)
                    Ucp.h().epFlushNbx.invokeExact(handle, worker.requestParam(0, callbackStub, userData));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_ep_rkey_unpack} of a peer's packed key. */
    public UcpRemoteKey unpack(byte[] packedRkey) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            UcpContext.check("ucp_ep_rkey_unpack(" + packedRkey.length + " bytes)", (int)
                    Ucp.h().rkeyUnpack.invokeExact(handle, a.allocateFrom(JAVA_BYTE, packedRkey), out));
            return new UcpRemoteKey(out.get(ADDRESS, 0));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /**
     * {@code ucp_ep_print_info} captured as text: the lanes UCX chose and which transport serves AM
     * and RMA, e.g. {@code lane[2]: 5:cma/memory.0 md[4] -> ... rma_bw#0}.
     */
    public String info() {
        Ucp.Handles h = Ucp.h();
        // a block body: as an expression lambda invokeExact would be typed as returning Object, not void
        return LibC.captureOutput(stream -> {
            h.epPrintInfo.invokeExact(handle, stream);
        });
    }

    /**
     * {@code ucp_ep_close_nbx}; {@code force} drops pending operations (use after a peer failure).
     * Returns the status pointer; a request must be progressed and freed by the caller.
     */
    public MemorySegment close(boolean force, MemorySegment callbackStub, long userData) {
        if (!owned) {
            throw new IllegalStateException("a borrowed endpoint belongs to UCX and is not closed by the user");
        }
        try {
            return (MemorySegment) Ucp.h()
                    .epCloseNbx
                    .invokeExact(
                            handle, worker.requestParam(force ? Ucp.EP_CLOSE_FLAG_FORCE : 0, callbackStub, userData));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** The raw handle, to match the endpoint an error handler reports. */
    public long id() {
        return handle.address();
    }
}
