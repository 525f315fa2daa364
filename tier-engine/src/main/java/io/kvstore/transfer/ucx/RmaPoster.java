package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.UcpRemoteKey;
import io.kvstore.transfer.TransferOp;
import java.lang.foreign.MemorySegment;

/**
 * {@link UcxPath#RMA}: each chunk is one {@code ucp_put_nbx} or {@code ucp_get_nbx} with the peer's rkey,
 * and a WRITE ends with an endpoint flush, because a put's completion only means the local buffer may be
 * reused, not that the bytes reached the peer.
 */
final class RmaPoster implements Poster {

    private final WorkerContext worker;
    private final OperationTable ops;

    RmaPoster(WorkerContext worker, OperationTable ops) {
        this.worker = worker;
        this.ops = ops;
    }

    @Override
    public UcpRemoteKey remoteKey(UcxPeer peer, RegionKey key) {
        return peer.rkey(key.packedRkey());
    }

    @Override
    public void postChunk(UcxRequest request, MemorySegment slice, long remoteAddress, UcpRemoteKey rkey) {
        UcxOp op = ops.add(request, UcxOpKind.SEND);
        request.pending++;
        MemorySegment status = request.op == TransferOp.WRITE
                ? request.peer.endpoint.put(slice, remoteAddress, rkey, worker.sendCallback(), op.id)
                : request.peer.endpoint.get(slice, remoteAddress, rkey, worker.sendCallback(), op.id);
        ops.complete(op, status);
    }

    @Override
    public void afterChunks(UcxRequest request) {
        if (request.op == TransferOp.WRITE && !request.future.isDone()) {
            UcxOp flush = ops.add(request, UcxOpKind.SEND);
            request.pending++;
            ops.complete(flush, request.peer.endpoint.flush(worker.sendCallback(), flush.id));
        }
    }
}
