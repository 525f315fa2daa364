package io.kvstore.transfer.ucx;

import java.lang.foreign.MemorySegment;
import java.util.function.IntConsumer;

/** One UCX operation in flight, keyed by the id passed to UCX as user data. */
final class UcxOp {
    final long id;
    final UcxRequest request;
    UcxOpKind kind;
    MemorySegment ucxRequest;
    /** A pooled message header the send still reads; recycled when the operation finishes. */
    MemorySegment header;
    /** Where a READ chunk's reply lands. */
    MemorySegment target;
    /** The region a serving operation (a peer's READ answered, its WRITE received) reads or writes. */
    UcxRegion serving;
    /** What a {@link UcxOpKind#SERVE_RECV} does with its status once the data is in (acknowledge it). */
    IntConsumer whenServed;

    int status;

    UcxOp(long id, UcxRequest request, UcxOpKind kind) {
        this.id = id;
        this.request = request;
        this.kind = kind;
    }
}
