package io.kvstore.service.events;

/**
 * How each event inside a batch is encoded; the batch itself is always an array
 * ({@code [ts, events, data_parallel_rank]}).
 */
public enum EventEncoding {
    /** {@code ["BlockStored", block_hashes, ...]}: msgspec {@code array_like=True, tag=True}. */
    ARRAY,
    /** {@code {"type": "BlockStored", "block_hashes": ...}}: msgspec {@code tag=True}, vLLM main since #42892. */
    MAP
}
