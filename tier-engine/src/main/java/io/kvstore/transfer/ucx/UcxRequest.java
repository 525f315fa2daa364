package io.kvstore.transfer.ucx;

import io.kvstore.transfer.TransferException;
import io.kvstore.transfer.TransferOp;
import io.kvstore.transfer.TransferResult;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** One {@link UcxTransferEngine#post} call: its chunks, deadline and future; once submitted, only the progress thread changes it. */
final class UcxRequest {
    final TransferOp op;
    final UcxPeer peer;
    final long bytes;
    final int transfers;
    final long started;
    final CompletableFuture<TransferResult> future = new CompletableFuture<>();
    long deadline;
    int pending;
    boolean posted;
    /** The local region the request reads or writes, set when it starts. */
    UcxRegion local;

    UcxRequest(TransferOp op, UcxPeer peer, long bytes, int transfers, long started) {
        this.op = op;
        this.peer = peer;
        this.bytes = bytes;
        this.transfers = transfers;
        this.started = started;
    }

    void maybeFinish() {
        if (posted && pending == 0 && !future.isDone()) {
            future.complete(new TransferResult(bytes, transfers, Duration.ofNanos(System.nanoTime() - started)));
        }
    }

    void fail(TransferException e) {
        future.completeExceptionally(e);
    }
}
