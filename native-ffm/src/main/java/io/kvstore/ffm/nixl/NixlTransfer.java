package io.kvstore.ffm.nixl;

import static java.lang.foreign.ValueLayout.ADDRESS;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A NIXL transfer request: created once from local and remote descriptor lists, then posted and
 * polled until done. {@link #close()} releases the request and frees the lists, once
 * ({@link NativeHandle}: the request is the handle).
 *
 * <p>NIXL cannot stop a transfer in flight: releasing an in-progress request asks the backend to cancel
 * it, and UCX's {@code ucp_request_cancel} does not stop an RMA get or put; NIXL then forgets the request
 * and reports success while the bytes keep moving into (READ) or out of (WRITE) the local memory, with
 * nothing left to say when they stop. Only destroying the agent stops them. So {@link #close()} refuses,
 * with an {@link IllegalStateException}, a request whose {@link #post()} returned false until
 * {@link #isDone()} returned true or threw; the agent's owner, about to destroy the agent, lets go of one
 * with {@link #abandon()}. Closing the agent abandons every request of it still open, in flight or not,
 * right before destroying it ({@link NixlAgent}); the request's close then does nothing.
 */
public final class NixlTransfer extends NativeHandle {

    private final NixlAgent agent;
    private final String description;
    private final MemorySegment localList;
    private final MemorySegment remoteList;
    private final MemorySegment postArgs;
    /** The request, also for the agent's close once this is marked closed. */
    private final MemorySegment request;
    /** Posted and not yet reported done or failed: NIXL (UCX) may still move its bytes. */
    private volatile boolean inFlight;
    /** Set by {@link #abandon()}: released although in flight, its agent destroyed next. */
    private volatile boolean abandoned;

    private NixlTransfer(
            NixlAgent agent,
            String description,
            MemorySegment request,
            MemorySegment localList,
            MemorySegment remoteList,
            MemorySegment postArgs) {
        super(request);
        this.agent = agent;
        this.description = description;
        this.localList = localList;
        this.remoteList = remoteList;
        this.postArgs = postArgs;
        this.request = request;
    }

    static NixlTransfer create(
            NixlAgent agent,
            int operation,
            int localType,
            List<NixlDescriptor> local,
            int remoteType,
            List<NixlDescriptor> remote,
            String remoteAgent,
            NixlBackend backend,
            byte[] notification) {
        if (operation != Nixl.XFER_READ && operation != Nixl.XFER_WRITE) {
            throw new IllegalArgumentException(
                    "NIXL transfer operation must be XFER_READ (0) or XFER_WRITE (1), got " + operation);
        }
        if (local.isEmpty() || local.size() != remote.size()) {
            throw new IllegalArgumentException(
                    "a NIXL transfer needs as many local as remote descriptors (and at least one), got " + local.size()
                            + " and " + remote.size());
        }
        for (int i = 0; i < local.size(); i++) {
            if (local.get(i).length() != remote.get(i).length()) {
                throw new IllegalArgumentException("descriptor " + i + " differs in length: local "
                        + local.get(i).length() + ", remote " + remote.get(i).length());
            }
        }
        String description = (operation == Nixl.XFER_READ ? "READ" : "WRITE") + " of " + local.size()
                + " descriptor(s) " + agent.name() + " <-> " + remoteAgent;
        MemorySegment handle = agent.enter();
        try {
            return createInUse(
                    agent,
                    handle,
                    description,
                    operation,
                    localType,
                    local,
                    remoteType,
                    remote,
                    remoteAgent,
                    backend,
                    notification);
        } finally {
            agent.exit();
        }
    }

    /** {@link #create} inside a use of the agent, whose {@code handle} stays valid throughout. */
    private static NixlTransfer createInUse(
            NixlAgent agent,
            MemorySegment handle,
            String description,
            int operation,
            int localType,
            List<NixlDescriptor> local,
            int remoteType,
            List<NixlDescriptor> remote,
            String remoteAgent,
            NixlBackend backend,
            byte[] notification) {
        Nixl nixl = agent.nixl();
        MemorySegment localList = newXferList(nixl, localType, local);
        MemorySegment remoteList = MemorySegment.NULL;
        MemorySegment createArgs = MemorySegment.NULL;
        MemorySegment postArgs = MemorySegment.NULL;
        try {
            remoteList = newXferList(nixl, remoteType, remote);
            createArgs = agent.optArgs(backend, null);
            postArgs = agent.optArgs(null, notification);
            MemorySegment rl = remoteList;
            MemorySegment ca = createArgs;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ADDRESS);
                NixlAgent.call(
                        "nixl_capi_create_xfer_req(" + description + ")", a -> (int) nixl.createXferReq.invokeExact(
                                handle, operation, localList, rl, a.allocateFrom(remoteAgent), out, ca));
                NixlTransfer transfer =
                        new NixlTransfer(agent, description, out.get(ADDRESS, 0), localList, remoteList, postArgs);
                agent.adopt(transfer); // inside the use: a close racing this one then releases it
                return transfer;
            }
        } catch (RuntimeException e) {
            destroyList(nixl, localList);
            destroyList(nixl, remoteList);
            agent.destroyOptArgs(postArgs);
            throw e;
        } finally {
            agent.destroyOptArgs(createArgs);
        }
    }

    private static MemorySegment newXferList(Nixl nixl, int type, List<NixlDescriptor> descriptors) {
        MemorySegment dlist;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            NixlAgent.call("nixl_capi_create_xfer_dlist(" + type + ")", a ->
                    (int) nixl.createXferDlist.invokeExact(type, out));
            dlist = out.get(ADDRESS, 0);
        }
        try {
            for (NixlDescriptor d : descriptors) {
                NixlAgent.call(
                        "nixl_capi_xfer_dlist_add_desc(0x" + Long.toHexString(d.address()) + ", " + d.length()
                                + ", dev " + d.deviceId() + ")",
                        a -> (int) nixl.xferDlistAddDesc.invokeExact(dlist, d.address(), d.length(), d.deviceId()));
            }
            return dlist;
        } catch (RuntimeException e) {
            destroyList(nixl, dlist);
            throw e;
        }
    }

    private static void destroyList(Nixl nixl, MemorySegment dlist) {
        if (!dlist.equals(MemorySegment.NULL)) {
            NixlAgent.call("nixl_capi_destroy_xfer_dlist", a -> (int) nixl.destroyXferDlist.invokeExact(dlist));
        }
    }

    /**
     * Posts the request; returns true when it already completed, false when it is in progress
     * (poll {@link #isDone()}).
     */
    public boolean post() {
        boolean done = done(
                "nixl_capi_post_xfer_req(" + description + ")",
                () -> agent.inUse(h -> (int) agent.nixl().postXferReq.invokeExact(h, live(), postArgs)));
        inFlight = !done;
        return done;
    }

    /** Whether the posted request has completed; throws a {@link NixlException} when it failed. */
    public boolean isDone() {
        boolean done;
        try {
            done = done(
                    "nixl_capi_get_xfer_status(" + description + ")",
                    () -> agent.inUse(h -> (int) agent.nixl().getXferStatus.invokeExact(h, live())));
        } catch (NixlException failed) {
            inFlight = false; // NIXL let go of it
            throw failed;
        }
        if (done) {
            inFlight = false;
        }
        return done;
    }

    /**
     * Releases this request even while it is in flight, which only makes NIXL forget it: for the agent's
     * owner that destroys the agent (and so stops the transfer) right after, and only then hands the local
     * memory back.
     */
    public void abandon() {
        abandoned = true;
        close();
    }

    /** Refuses to release a request in flight unless {@link #abandon() abandoned}: NIXL cannot stop it. */
    @Override
    protected void checkReleasable() {
        if (inFlight && !abandoned) {
            throw new IllegalStateException(this + " is in flight: NIXL cannot stop it (releasing it only forgets it"
                    + " while the bytes keep moving); close it once isDone() returned true or threw");
        }
    }

    @FunctionalInterface
    private interface StatusCall {
        int invoke() throws Throwable;
    }

    private static boolean done(String what, StatusCall call) {
        int status;
        try {
            status = call.invoke();
        } catch (IllegalStateException closed) {
            throw closed; // this request or its agent is closed: named by NativeHandle, nothing was called
        } catch (Throwable t) {
            throw new IllegalStateException(what + " could not be invoked", t);
        }
        if (status == Nixl.IN_PROG) {
            return false;
        }
        Nixl.check(what, status);
        return true;
    }

    /**
     * {@code nixl_capi_release_xfer_req} and {@code nixl_capi_destroy_xfer_req}, then the lists and arguments, inside
     * a use of the agent; once the agent is closing, it does all that and this waits for it.
     */
    @Override
    protected void release(MemorySegment request) {
        agent.releaseChild(this, h -> releaseOn(h, request));
    }

    /** The agent's close releasing this request, still open and perhaps in flight, on its {@code agentHandle}. */
    void releasedWithAgent(MemorySegment agentHandle) {
        markReleased();
        releaseOn(agentHandle, request);
    }

    private void releaseOn(MemorySegment agentHandle, MemorySegment request) {
        Nixl nixl = agent.nixl();
        try {
            NixlAgent.call("nixl_capi_release_xfer_req(" + description + ")", a ->
                    (int) nixl.releaseXferReq.invokeExact(agentHandle, request));
            NixlAgent.call("nixl_capi_destroy_xfer_req", a -> (int) nixl.destroyXferReq.invokeExact(request));
        } finally {
            destroyList(nixl, localList);
            destroyList(nixl, remoteList);
            agent.destroyOptArgs(postArgs);
        }
    }

    @Override
    public String toString() {
        return "NIXL transfer " + description;
    }
}
