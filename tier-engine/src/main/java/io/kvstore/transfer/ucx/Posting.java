package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.UcpRemoteKey;
import io.kvstore.transfer.TransferException;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Starts a request on the progress thread: refuses it when its region or peer closed meanwhile, sets
 * its deadline, cuts its spans into chunks of at most {@link UcxSettings#maxMessageBytes()} (so one
 * request cannot monopolise the worker) and hands each to the {@link Poster} of the peer's path.
 */
final class Posting {

    private final OperationTable ops;
    private final UcxSettings settings;
    private final RmaPoster rma;
    private final ActiveMessagePoster activeMessages;

    Posting(OperationTable ops, UcxSettings settings, RmaPoster rma, ActiveMessagePoster activeMessages) {
        this.ops = ops;
        this.settings = settings;
        this.rma = rma;
        this.activeMessages = activeMessages;
    }

    void start(UcxRequest request, UcxRegion local, RegionKey key, List<TransferSpan> spans) {
        UcxPeer peer = request.peer;
        if (local.closed) {
            request.fail(new TransferException("local region at 0x" + Long.toHexString(local.segment.address())
                    + " was closed before the " + request.op + " could start"));
            return;
        }
        if (peer.closed || peer.failed) {
            request.fail(
                    new TransferException("UCX peer " + peer.name() + " is " + (peer.failed ? "failed" : "closed")));
            return;
        }
        request.deadline = request.started + settings.requestTimeout().toNanos();
        request.local = local;
        ops.track(request);
        Poster poster = peer.path() == UcxPath.RMA ? rma : activeMessages;
        try {
            UcpRemoteKey rkey = poster.remoteKey(peer, key);
            long max = settings.maxMessageBytes();
            for (TransferSpan s : spans) {
                for (long done = 0; done < s.length() && !request.future.isDone(); done += max) {
                    long len = Math.min(max, s.length() - done);
                    MemorySegment slice = local.segment.asSlice(s.localOffset() + done, len);
                    poster.postChunk(request, slice, key.address() + s.remoteOffset() + done, rkey);
                }
            }
            poster.afterChunks(request);
        } catch (RuntimeException e) {
            request.fail(new TransferException(
                    "UCX " + request.op + " to " + peer.name() + " failed: " + e.getMessage(), e));
        }
        request.posted = true;
        request.maybeFinish();
    }
}
