package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.ffm.ucx.UcpEndpoint;
import io.kvstore.ffm.ucx.UcpRemoteKey;
import io.kvstore.ffm.ucx.UcpStatus;
import io.kvstore.transfer.TransferException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens and closes a worker's endpoints: connects to a peer's worker address, lets wire-up finish,
 * reads the lanes UCX chose and follows {@link PathChoice} (possibly reconnecting with peer-failure
 * detection); tracks the connected peers so UCX's endpoint error handler can find them, and closes
 * them. Runs on the progress thread.
 */
final class Connector {

    private static final Logger LOG = LoggerFactory.getLogger(Connector.class);
    private static final long CONTROL_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final WorkerContext worker;
    private final OperationTable ops;
    private final UcxPath wanted;
    private final Object owner;
    private final Consumer<UcxPeer> onClose;
    private final Consumer<Runnable> later;
    private final Map<Long, UcxPeer> peersById = new HashMap<>();

    /**
     * @param owner the engine's identity, stamped on each peer
     * @param onClose what a peer's {@code close()} calls
     * @param later runs a task on the loop's next turn (UCX forbids closing from inside its callbacks)
     */
    Connector(
            WorkerContext worker,
            OperationTable ops,
            UcxPath wanted,
            Object owner,
            Consumer<UcxPeer> onClose,
            Consumer<Runnable> later) {
        this.worker = worker;
        this.ops = ops;
        this.wanted = wanted;
        this.owner = owner;
        this.onClose = onClose;
        this.later = later;
    }

    /** Connects to the worker at {@code address} on the path {@link PathChoice} picks. */
    UcxPeer connect(String name, byte[] address) {
        long id = ops.nextId();
        boolean peerFailureDetection = PathChoice.startWithPeerFailureDetection(wanted);
        while (true) {
            UcpEndpoint ep = peerFailureDetection
                    ? worker.worker()
                            .connect(address, Ucp.ERR_MODE_PEER, worker.errorCallback(), MemorySegment.ofAddress(id))
                    : worker.worker().connect(address, Ucp.ERR_MODE_NONE, MemorySegment.NULL, MemorySegment.NULL);
            String info = settle(name, ep);
            String transport = PathChoice.rmaTransport(info);
            if (PathChoice.next(wanted, peerFailureDetection, transport) instanceof PathChoice.Use(UcxPath path)) {
                UcxPeer peer = new UcxPeer(name, id, ep, path, peerFailureDetection, info, owner, onClose);
                peersById.put(id, peer);
                LOG.info(
                        "UCX connected to {}: path {} (rma_bw lane: {}, peer-failure detection: {})",
                        name,
                        path,
                        transport == null ? "none" : transport,
                        peerFailureDetection);
                return peer;
            }
            closeEndpoint(ep, false);
            peerFailureDetection = true;
        }
    }

    /** Flushes a new endpoint so wire-up finishes, then returns UCX's description of its lanes. */
    private String settle(String name, UcpEndpoint ep) {
        UcxOp flush = ops.control(id -> ep.flush(worker.sendCallback(), id), CONTROL_TIMEOUT_NANOS);
        if (flush == null) {
            throw new TransferException("UCX connect to " + name + ": endpoint did not settle in 10 s");
        }
        if (flush.status != UcpStatus.OK) {
            throw new TransferException(
                    "UCX connect to " + name + ": ucp_ep_flush_nbx failed: " + UcpStatus.describe(flush.status));
        }
        return ep.info();
    }

    /** Closes {@code peer} (once): its rkeys, then its endpoint; {@code force} drops pending operations. */
    void close(UcxPeer peer, boolean force) {
        if (peer.closed) {
            return;
        }
        peer.closed = true;
        peersById.remove(peer.id);
        for (UcpRemoteKey k : peer.rkeys.values()) {
            k.close();
        }
        peer.rkeys.clear();
        closeEndpoint(peer.endpoint, force || peer.failed);
    }

    /** Marks {@code peer} failed, forgets its chunks waiting for replies and closes it by force. */
    void disconnect(UcxPeer peer) {
        peer.failed = true;
        ops.dropAwaitingReplies(peer);
        close(peer, true);
    }

    private void closeEndpoint(UcpEndpoint ep, boolean force) {
        ops.control(id -> ep.close(force, worker.sendCallback(), id), CONTROL_TIMEOUT_NANOS);
    }

    /** Closes every peer by force: the engine is closing. */
    void closeAll() {
        for (UcxPeer p : new ArrayList<>(peersById.values())) {
            close(p, true);
        }
    }

    /** UCX's endpoint error handler: the peer died or the connection broke. */
    void onEndpointError(MemorySegment arg, MemorySegment ep, int status) {
        try {
            UcxPeer peer = peersById.get(arg.address());
            if (peer == null) {
                return;
            }
            peer.failed = true;
            String why =
                    "UCX endpoint to " + peer.name() + " failed: " + UcpStatus.describe(status) + " (" + status + ")";
            LOG.warn(why);
            ops.failRequestsOf(peer, why);
            ops.dropAwaitingReplies(peer);
            // Closing from inside the callback is not allowed; the next command turn does it.
            later.accept(() -> close(peer, true));
        } catch (Throwable t) {
            LOG.error("UCX error handler failed", t);
        }
    }
}
