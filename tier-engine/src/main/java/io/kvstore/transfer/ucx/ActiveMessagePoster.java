package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.ffm.ucx.UcpRemoteKey;
import io.kvstore.ffm.ucx.UcpStatus;
import io.kvstore.transfer.TransferException;
import io.kvstore.transfer.TransferOp;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link UcxPath#ACTIVE_MESSAGES}: a WRITE chunk is a {@link AmHeader#WRITE} message carrying the bytes, a
 * READ chunk a {@link AmHeader#READ} request; either finishes when the peer's {@link ActiveMessageServer}
 * answers ({@link AmHeader#WRITE_ACK}, {@link AmHeader#READ_REPLY}), which this poster's reply handler
 * receives. The send itself only has to succeed. UCX picks eager or rendezvous per message; a rendezvous
 * READ reply is received straight into the caller's memory.
 */
final class ActiveMessagePoster implements Poster {

    private static final Logger LOG = LoggerFactory.getLogger(ActiveMessagePoster.class);
    private static final MemorySegment NO_DATA = MemorySegment.NULL.reinterpret(0);

    private final WorkerContext worker;
    private final OperationTable ops;

    ActiveMessagePoster(WorkerContext worker, OperationTable ops) {
        this.worker = worker;
        this.ops = ops;
    }

    /** Registers the reply handlers with the worker. */
    void install() {
        worker.onMessage(AmHeader.WRITE_ACK, this::onReply);
        worker.onMessage(AmHeader.READ_REPLY, this::onReply);
    }

    @Override
    public UcpRemoteKey remoteKey(UcxPeer peer, RegionKey key) {
        return null; // the peer's engine resolves the address against its own regions
    }

    @Override
    public void postChunk(UcxRequest request, MemorySegment slice, long remoteAddress, UcpRemoteKey rkey) {
        UcxOp chunk = ops.add(request, UcxOpKind.AWAIT_REPLY);
        chunk.target = slice;
        request.pending++;
        UcxOp send = ops.add(request, UcxOpKind.SEND_NO_COUNT);
        send.header = worker.header(); // owned by the send until it completes
        MemorySegment header =
                AmHeader.write(new AmHeader.Request(chunk.id, remoteAddress, slice.byteSize()), send.header);
        MemorySegment status = request.op == TransferOp.WRITE
                ? request.peer.endpoint.amSend(
                        AmHeader.WRITE, header, slice, Ucp.AM_SEND_FLAG_REPLY, worker.sendCallback(), send.id)
                : request.peer.endpoint.amSend(
                        AmHeader.READ, header, NO_DATA, Ucp.AM_SEND_FLAG_REPLY, worker.sendCallback(), send.id);
        ops.complete(send, status);
    }

    @Override
    public void afterChunks(UcxRequest request) {
        // each chunk completes on its reply, which comes after the peer wrote or read the bytes
    }

    /** A WRITE_ACK or READ_REPLY arrived for one of our chunks. */
    private int onReply(
            MemorySegment arg,
            MemorySegment header,
            long headerLength,
            MemorySegment data,
            long length,
            MemorySegment param) {
        try {
            AmHeader.Params params = AmHeader.params(param);
            AmHeader.Reply reply = AmHeader.reply(header, headerLength);
            UcxOp chunk = reply == null ? null : ops.get(reply.opId());
            if (chunk == null || chunk.kind != UcxOpKind.AWAIT_REPLY) {
                worker.dropUnreceived(params, data);
                return UcpStatus.OK; // the request already failed or timed out, or not a kvstore message
            }
            UcxRequest request = chunk.request;
            if (reply.status() != UcpStatus.OK) {
                worker.dropUnreceived(params, data);
                ops.remove(chunk.id);
                request.fail(new TransferException("UCX " + request.op + " with " + request.peer.name()
                        + " refused by the peer: " + UcpStatus.describe(reply.status())
                        + " (address outside its registered memory)"));
                return UcpStatus.OK;
            }
            if (request.op == TransferOp.WRITE) {
                ops.finish(chunk, UcpStatus.OK, null);
            } else if (length != chunk.target.byteSize()) {
                worker.dropUnreceived(params, data);
                ops.remove(chunk.id);
                request.fail(new TransferException("UCX READ from " + request.peer.name() + " answered " + length
                        + " bytes, expected " + chunk.target.byteSize()));
            } else if (params.rendezvous()) {
                // Receive straight into the caller's memory; the chunk finishes with the receive.
                chunk.kind = UcxOpKind.SEND;
                ops.complete(chunk, worker.worker().amRecvData(data, chunk.target, worker.recvCallback(), chunk.id));
            } else {
                MemorySegment.copy(data.reinterpret(length), 0, chunk.target, 0, length);
                ops.finish(chunk, UcpStatus.OK, null);
            }
        } catch (Throwable t) {
            LOG.error("UCX reply handler failed", t);
        }
        return UcpStatus.OK;
    }
}
