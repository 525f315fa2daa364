package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.ffm.ucx.UcpStatus;
import io.kvstore.transfer.TransferException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.LongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every UCX operation in flight, keyed by the id UCX hands back as user data, and every request
 * ({@link UcxRequest}) with its deadline. A post's status pointer is {@link #complete}d here: done now,
 * failed now, or a UCX request whose callback later {@link #finish}es the operation, which counts it
 * towards its request. Confined to the progress thread, like the worker.
 */
final class OperationTable {

    private static final Logger LOG = LoggerFactory.getLogger(OperationTable.class);

    private final WorkerContext worker;
    private final Map<Long, UcxOp> ops = new HashMap<>();
    /** In posting order, so deadlines grow along the queue. */
    private final ArrayDeque<UcxRequest> requests = new ArrayDeque<>();

    private long nextId = 1;

    OperationTable(WorkerContext worker) {
        this.worker = worker;
    }

    /** A fresh id, for operations and for peers (as their error-handler argument). */
    long nextId() {
        return nextId++;
    }

    /** Adds a new operation of {@code kind} for {@code request} (null for housekeeping and serving). */
    UcxOp add(UcxRequest request, UcxOpKind kind) {
        UcxOp op = new UcxOp(nextId++, request, kind);
        ops.put(op.id, op);
        return op;
    }

    UcxOp get(long id) {
        return ops.get(id);
    }

    void remove(long id) {
        ops.remove(id);
    }

    boolean isEmpty() {
        return ops.isEmpty();
    }

    /** Starts watching {@code request}'s deadline. */
    void track(UcxRequest request) {
        requests.add(request);
    }

    /** Handles a status pointer returned by a post: done now, failed now, or a request to wait for. */
    void complete(UcxOp op, MemorySegment statusPtr) {
        if (UcpStatus.isRequest(statusPtr)) {
            op.ucxRequest = statusPtr;
            return;
        }
        finish(op, UcpStatus.of(statusPtr), null);
    }

    /** The completion callback of every send, put, get, flush and close. */
    void onSendComplete(MemorySegment request, int status, MemorySegment userData) {
        try {
            UcxOp op = ops.get(userData.address());
            if (op != null) {
                finish(op, status, request);
            } else {
                Ucp.requestFree(request);
            }
        } catch (Throwable t) {
            LOG.error("UCX send completion failed", t);
        }
    }

    /** The completion callback of {@code ucp_am_recv_data_nbx}. */
    void onRecvComplete(MemorySegment request, int status, long length, MemorySegment userData) {
        onSendComplete(request, status, userData);
    }

    /** Ends {@code op} with {@code status}: frees its UCX request and header and counts it towards its request. */
    void finish(UcxOp op, int status, MemorySegment ucxRequest) {
        if (ops.remove(op.id) == null) {
            return;
        }
        if (ucxRequest != null) {
            Ucp.requestFree(ucxRequest);
        }
        op.status = status;
        if (op.header != null) {
            worker.recycle(op.header);
            op.header = null;
        }
        if (op.whenServed != null) {
            op.whenServed.accept(status);
            return;
        }
        UcxRequest r = op.request;
        if (r == null) {
            return;
        }
        if (status != UcpStatus.OK) {
            r.fail(new TransferException("UCX " + r.op + " with " + r.peer.name() + " failed: "
                    + UcpStatus.describe(status) + " (" + status + ")"));
            return;
        }
        if (op.kind != UcxOpKind.SEND_NO_COUNT) {
            r.pending--;
            r.maybeFinish();
        }
    }

    /**
     * Posts a housekeeping operation ({@code post} gets its id and returns UCX's status pointer) and
     * progresses the worker until it completes or {@code timeoutNanos} pass.
     *
     * @return the operation, whose {@link UcxOp#status} is set; null when it timed out (then forgotten)
     */
    UcxOp control(LongFunction<MemorySegment> post, long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        UcxOp op = add(null, UcxOpKind.CONTROL);
        complete(op, post.apply(op.id));
        while (ops.containsKey(op.id)) {
            if (System.nanoTime() > deadline) {
                ops.remove(op.id);
                return null;
            }
            worker.worker().progress();
        }
        return op;
    }

    /**
     * Fails every request whose deadline passed.
     *
     * @return their peers, which the caller disconnects (a late byte must not land in local memory)
     */
    List<UcxPeer> expire(long now) {
        List<UcxPeer> timedOut = new ArrayList<>();
        for (Iterator<UcxRequest> it = requests.iterator(); it.hasNext(); ) {
            UcxRequest r = it.next();
            if (r.future.isDone()) {
                it.remove();
            } else if (now > r.deadline) {
                it.remove();
                r.fail(new TransferException(
                        "UCX " + r.op + " of " + r.bytes + " bytes with " + r.peer.name() + " timed out after "
                                + Duration.ofNanos(now - r.started).toMillis() + " ms; disconnecting"));
                timedOut.add(r.peer);
            } else {
                break; // deadlines grow in posting order
            }
        }
        return timedOut;
    }

    /** Fails every open request to {@code peer} with {@code why}. */
    void failRequestsOf(UcxPeer peer, String why) {
        for (UcxRequest r : requests) {
            if (r.peer == peer) {
                r.fail(new TransferException(why));
            }
        }
    }

    /** Fails every open request: the engine is closing. */
    void failAll() {
        for (UcxRequest r : requests) {
            r.fail(new TransferException("UCX engine closed before the request to " + r.peer.name() + " finished"));
        }
    }

    /** Forgets the chunks of {@code peer} waiting for a reply that will not come (no UCX request to free). */
    void dropAwaitingReplies(UcxPeer peer) {
        ops.values()
                .removeIf(op -> op.request != null
                        && op.request.peer == peer
                        && op.ucxRequest == null
                        && op.kind == UcxOpKind.AWAIT_REPLY);
    }

    /**
     * Progresses the worker until no operation reads or writes {@code region} or {@code deadline}
     * passes.
     *
     * @return the peers of the operations still on the region at the deadline; empty when all finished
     */
    List<UcxPeer> drain(UcxRegion region, long deadline) {
        while (ops.values().stream().anyMatch(op -> on(op, region))) {
            if (System.nanoTime() > deadline) {
                return ops.values().stream()
                        .filter(op -> on(op, region) && op.request != null)
                        .map(op -> op.request.peer)
                        .distinct()
                        .toList();
            }
            worker.worker().progress();
        }
        return List.of();
    }

    /** Forgets the operations on {@code region} that UCX holds no request for (after their peers were closed). */
    void forgetIdleOn(UcxRegion region) {
        ops.values().removeIf(op -> op.request != null && op.request.local == region && op.ucxRequest == null);
    }

    /** Whether UCX still reads or writes {@code region} to serve a peer's READ or WRITE. */
    boolean servingFrom(UcxRegion region) {
        return ops.values().stream().anyMatch(op -> op.serving == region);
    }

    private static boolean on(UcxOp op, UcxRegion region) {
        return (op.request != null && op.request.local == region) || op.serving == region;
    }
}
