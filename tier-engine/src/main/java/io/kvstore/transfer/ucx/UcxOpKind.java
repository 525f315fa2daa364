package io.kvstore.transfer.ucx;

/** What an {@link UcxOp} in flight is for, which decides what its completion does. */
enum UcxOpKind {
    /** A put, get, flush or receive that counts towards its request. */
    SEND,
    /** An active-message send whose request completes on the peer's reply, not on the send. */
    SEND_NO_COUNT,
    /** A chunk waiting for the peer's WRITE_ACK or READ_REPLY. */
    AWAIT_REPLY,
    /** Serving a peer: receiving a rendezvous WRITE, then acknowledging it. */
    SERVE_RECV,
    /** Serving a peer: an acknowledgement or READ reply in flight. */
    SERVE_SEND,
    /** Connect/close housekeeping. */
    CONTROL
}
