package io.kvstore.transfer.ucx;

/**
 * How a {@link UcxTransferEngine} moves bytes to one peer. Chosen per connection from the lanes UCX
 * selected (see {@link PathChoice} for the rule and docs/benchmarks.md for the figures).
 */
public enum UcxPath {
    /** One-sided {@code ucp_put_nbx}/{@code ucp_get_nbx}: the transport does RMA natively (shared memory, RDMA). */
    RMA,
    /**
     * Active messages served by the peer's engine: a WRITE carries the bytes, a READ asks for them.
     * Used over tcp, where UCX emulates RMA at a fraction of the bandwidth of messages.
     */
    ACTIVE_MESSAGES,
    /** Let the engine decide from the transports UCX selected for the endpoint. */
    AUTO
}
