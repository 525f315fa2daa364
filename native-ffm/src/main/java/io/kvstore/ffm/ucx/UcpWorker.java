package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.kvstore.ffm.NativeHandle;
import io.kvstore.ffm.libc.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A UCP worker ({@code ucp_worker_h}) created in {@code UCS_THREAD_MODE_SINGLE}: exactly one thread
 * (its progress thread) may call any method except {@link #signal()}. Single mode spares UCX's
 * internal lock on every call; the owner thread serialises work instead.
 *
 * <p>Holds one reusable {@code ucp_request_param_t}; UCX reads it only during the call.
 */
public final class UcpWorker extends NativeHandle {

    private final UcpContext context;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment param;
    private final MemorySegment pollfd;
    private final int eventFd;

    private UcpWorker(UcpContext context, MemorySegment handle, int eventFd) {
        super(handle);
        this.context = context;
        this.eventFd = eventFd;
        this.param = arena.allocate(UcpStructs.REQUEST_PARAM);
        this.pollfd = arena.allocate(LibC.POLLFD);
    }

    /** {@code ucp_worker_create} in single-thread mode, then {@code ucp_worker_get_efd}. */
    public static UcpWorker create(UcpContext context) {
        Ucp.Handles h = Ucp.h();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment params = a.allocate(UcpStructs.WORKER_PARAMS);
            params.set(JAVA_LONG, 0, 1L /* THREAD_MODE */);
            params.set(JAVA_INT, UcpStructs.offset(UcpStructs.WORKER_PARAMS, "thread_mode"), Ucp.THREAD_MODE_SINGLE);
            MemorySegment out = a.allocate(ADDRESS);
            UcpContext.check("ucp_worker_create", (int) h.workerCreate.invokeExact(context.handle(), params, out));
            MemorySegment worker = out.get(ADDRESS, 0);
            MemorySegment fd = a.allocate(JAVA_INT);
            int st = (int) h.workerGetEfd.invokeExact(worker, fd);
            if (st != UcpStatus.OK) {
                h.workerDestroy.invokeExact(worker);
                throw new UcxException("ucp_worker_get_efd", st);
            }
            return new UcpWorker(context, worker, fd.get(JAVA_INT, 0));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_worker_get_address}: what a peer passes to {@link #connect}. */
    public byte[] address() {
        Ucp.Handles h = Ucp.h();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            MemorySegment len = a.allocate(JAVA_LONG);
            UcpContext.check("ucp_worker_get_address", (int) h.workerGetAddress.invokeExact(handle(), out, len));
            MemorySegment address = out.get(ADDRESS, 0).reinterpret(len.get(JAVA_LONG, 0));
            byte[] bytes = address.toArray(JAVA_BYTE);
            h.workerReleaseAddress.invokeExact(handle(), address);
            return bytes;
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_worker_progress}: runs callbacks; returns how many events it handled. */
    public int progress() {
        try {
            return (int) Ucp.h().workerProgress.invokeExact(handle());
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /**
     * {@code ucp_worker_arm} then {@code poll} on the worker's event descriptor for at most
     * {@code timeoutMillis}. Returns at once when events are already pending (arm says busy).
     */
    public void await(int timeoutMillis) {
        Ucp.Handles h = Ucp.h();
        try {
            int st = (int) h.workerArm.invokeExact(handle());
            if (st == UcpStatus.ERR_BUSY) {
                return;
            }
            UcpContext.check("ucp_worker_arm", st);
            pollfd.set(JAVA_INT, 0, eventFd);
            pollfd.set(JAVA_SHORT, 4, LibC.POLLIN);
            pollfd.set(JAVA_SHORT, 6, (short) 0);
            LibC.poll(pollfd, 1, timeoutMillis); // ready, timed out or interrupted: the caller progresses either way
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_worker_signal}: wakes {@link #await}; the one call any thread may make. */
    public void signal() {
        try {
            int st = (int) Ucp.h().workerSignal.invokeExact(handle());
            UcpContext.check("ucp_worker_signal", st);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_worker_set_am_recv_handler} for message {@code id}, whole messages only. */
    public void setAmHandler(int id, MemorySegment handlerStub, MemorySegment arg) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(UcpStructs.AM_HANDLER_PARAM);
            p.set(JAVA_LONG, 0, 0b1111L /* ID | FLAGS | CB | ARG */);
            p.set(JAVA_INT, UcpStructs.offset(UcpStructs.AM_HANDLER_PARAM, "id"), id);
            p.set(JAVA_INT, UcpStructs.offset(UcpStructs.AM_HANDLER_PARAM, "flags"), Ucp.AM_FLAG_WHOLE_MSG);
            p.set(ADDRESS, UcpStructs.offset(UcpStructs.AM_HANDLER_PARAM, "cb"), handlerStub);
            p.set(ADDRESS, UcpStructs.offset(UcpStructs.AM_HANDLER_PARAM, "arg"), arg);
            UcpContext.check("ucp_worker_set_am_recv_handler(id=" + id + ")", (int)
                    Ucp.h().setAmHandler.invokeExact(handle(), p));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /**
     * {@code ucp_ep_create} to a peer's worker address.
     *
     * @param errMode {@link Ucp#ERR_MODE_NONE} or {@link Ucp#ERR_MODE_PEER}; UCX 1.13 has no
     *     shared-memory transport that supports PEER, so PEER forces tcp (or RDMA)
     * @param errorStub an {@link Ucp#errorHandler} stub, or NULL
     * @param errorArg passed back to the error handler
     */
    public UcpEndpoint connect(byte[] peerAddress, int errMode, MemorySegment errorStub, MemorySegment errorArg) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = endpointParams(a, 0b1L /* REMOTE_ADDRESS */, errMode, errorStub, errorArg);
            p.set(ADDRESS, UcpStructs.offset(UcpStructs.EP_PARAMS, "address"), a.allocateFrom(JAVA_BYTE, peerAddress));
            return createEndpoint(a, p, "address of " + peerAddress.length + " bytes, err_mode=" + errMode);
        }
    }

    /**
     * A {@code ucp_ep_params_t} in {@code a} with {@code fields} (the way to reach the peer) plus the error
     * handling mode, and the error handler when {@code errorStub} is not NULL.
     */
    private static MemorySegment endpointParams(
            Arena a, long fields, int errMode, MemorySegment errorStub, MemorySegment errorArg) {
        MemorySegment p = a.allocate(UcpStructs.EP_PARAMS);
        long mask = fields | 0b10L; // ERR_HANDLING_MODE
        if (errorStub.address() != 0) {
            mask |= 0b100L; // ERR_HANDLER
            p.set(ADDRESS, UcpStructs.offset(UcpStructs.EP_PARAMS, "err_handler_cb"), errorStub);
            p.set(ADDRESS, UcpStructs.offset(UcpStructs.EP_PARAMS, "err_handler_arg"), errorArg);
        }
        p.set(JAVA_LONG, 0, mask);
        p.set(JAVA_INT, UcpStructs.offset(UcpStructs.EP_PARAMS, "err_mode"), errMode);
        return p;
    }

    /** {@code ucp_ep_create} with {@code params}; {@code what} names the peer in the error. */
    private UcpEndpoint createEndpoint(Arena a, MemorySegment params, String what) {
        try {
            MemorySegment out = a.allocate(ADDRESS);
            UcpContext.check(
                    "ucp_ep_create(" + what + ")", (int) Ucp.h().epCreate.invokeExact(handle(), params, out));
            return new UcpEndpoint(this, out.get(ADDRESS, 0), true);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /**
     * {@code ucp_listener_create} on {@code address} (port 0 lets the system choose; see
     * {@link UcpListener#port()}). Each client's connection request reaches {@code connHandlerStub} (an
     * {@link Ucp#connHandler} stub) during {@link #progress()}, with {@code arg}.
     */
    public UcpListener listen(java.net.InetSocketAddress address, MemorySegment connHandlerStub, MemorySegment arg) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(UcpStructs.LISTENER_PARAMS);
            p.set(JAVA_LONG, 0, 0b101L); // SOCK_ADDR | CONN_HANDLER
            p.set(
                    ADDRESS,
                    UcpStructs.offset(UcpStructs.LISTENER_PARAMS, "sockaddr_addr"),
                    SocketAddresses.sockaddrIn(address, a));
            p.set(
                    JAVA_INT,
                    UcpStructs.offset(UcpStructs.LISTENER_PARAMS, "sockaddr_addrlen"),
                    SocketAddresses.SOCKADDR_IN_BYTES);
            p.set(ADDRESS, UcpStructs.offset(UcpStructs.LISTENER_PARAMS, "conn_handler_cb"), connHandlerStub);
            p.set(ADDRESS, UcpStructs.offset(UcpStructs.LISTENER_PARAMS, "conn_handler_arg"), arg);
            MemorySegment out = a.allocate(ADDRESS);
            UcpContext.check("ucp_listener_create(" + address + ")", (int)
                    Ucp.h().listenerCreate.invokeExact(handle(), p, out));
            return new UcpListener(out.get(ADDRESS, 0));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_ep_create} answering a listener's connection request (server side). */
    public UcpEndpoint accept(MemorySegment connRequest, int errMode, MemorySegment errorStub, MemorySegment errorArg) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = endpointParams(a, 1L << 6 /* CONN_REQUEST */, errMode, errorStub, errorArg);
            p.set(ADDRESS, UcpStructs.offset(UcpStructs.EP_PARAMS, "conn_request"), connRequest);
            return createEndpoint(a, p, "connection request");
        }
    }

    /** {@code ucp_ep_create} to a listener at {@code address} (client side of client-server wire-up). */
    public UcpEndpoint connect(
            java.net.InetSocketAddress address, int errMode, MemorySegment errorStub, MemorySegment errorArg) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p =
                    endpointParams(a, (1L << 4) | (1L << 5) /* SOCK_ADDR | FLAGS */, errMode, errorStub, errorArg);
            p.set(JAVA_INT, UcpStructs.offset(UcpStructs.EP_PARAMS, "flags"), Ucp.EP_PARAMS_FLAGS_CLIENT_SERVER);
            p.set(
                    ADDRESS,
                    UcpStructs.offset(UcpStructs.EP_PARAMS, "sockaddr_addr"),
                    SocketAddresses.sockaddrIn(address, a));
            p.set(
                    JAVA_INT,
                    UcpStructs.offset(UcpStructs.EP_PARAMS, "sockaddr_addrlen"),
                    SocketAddresses.SOCKADDR_IN_BYTES);
            return createEndpoint(a, p, address + ", client-server");
        }
    }

    /** A non-owning view of an endpoint UCX handed to a callback (an active message's reply endpoint). */
    public UcpEndpoint borrow(MemorySegment endpointHandle) {
        return new UcpEndpoint(this, endpointHandle, false);
    }

    /**
     * {@code ucp_am_recv_data_nbx}: fetches a rendezvous message's data into {@code target}.
     *
     * @return a {@code ucs_status_ptr_t}: NULL when done at once, an error, or a request
     */
    public MemorySegment amRecvData(
            MemorySegment dataDesc, MemorySegment target, MemorySegment callbackStub, long userData) {
        try {
            return (MemorySegment) Ucp.h()
                    .amRecvDataNbx
                    .invokeExact(
                            handle(), dataDesc, target, target.byteSize(), requestParam(0, callbackStub, userData));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_am_data_release}: drops a message's data the handler chose not to receive. */
    public void amDataRelease(MemorySegment data) {
        try {
            Ucp.h().amDataRelease.invokeExact(handle(), data);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_request_cancel}. */
    public void cancel(MemorySegment request) {
        try {
            Ucp.h().requestCancel.invokeExact(handle(), request);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    // resolved once: a layout path lookup per post cost ~2 % of a 256 KiB shared-memory PUT (perf)
    private static final long REQUEST_PARAM_CB = UcpStructs.offset(UcpStructs.REQUEST_PARAM, "cb");
    private static final long REQUEST_PARAM_USER_DATA = UcpStructs.offset(UcpStructs.REQUEST_PARAM, "user_data");

    /** Fills the reusable parameter block: callback + user data (+ op-specific flags when non-zero). */
    MemorySegment requestParam(int flags, MemorySegment callbackStub, long userData) {
        int mask = Ucp.OP_ATTR_CALLBACK | Ucp.OP_ATTR_USER_DATA;
        if (flags != 0) {
            mask |= Ucp.OP_ATTR_FLAGS;
        }
        param.set(JAVA_INT, 0, mask);
        param.set(JAVA_INT, 4, flags);
        param.set(ADDRESS, REQUEST_PARAM_CB, callbackStub);
        param.set(JAVA_LONG, REQUEST_PARAM_USER_DATA, userData);
        return param;
    }

    MemorySegment handle() {
        return live();
    }

    public UcpContext context() {
        return context;
    }

    /** {@code ucp_worker_destroy}; endpoints must be closed first. */
    @Override
    protected void release(MemorySegment handle) {
        try {
            Ucp.h().workerDestroy.invokeExact(handle);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        } finally {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "UCP worker 0x" + Long.toHexString(handleAddress());
    }
}
