package io.kvstore.transfer.ucx;

import java.lang.foreign.MemorySegment;

/** One UCX operation in flight, keyed by the id passed to UCX as user data. */
final class UcxOp {
    final long id;
    final UcxRequest request;
    UcxOpKind kind;
    MemorySegment ucxRequest;
    MemorySegment header;
    MemorySegment target;
    MemorySegment replyEndpoint;
    long replyTo;
    int status;

    UcxOp(long id, UcxRequest request, UcxOpKind kind) {
        this.id = id;
        this.request = request;
        this.kind = kind;
    }
}
