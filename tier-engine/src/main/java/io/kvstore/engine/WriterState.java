package io.kvstore.engine;

/**
 * What the service that watches a reservation's writer knows of it, asked when the reservation expires and
 * at each sweep after ({@link TierEngine#reserve(java.util.List, io.kvstore.block.TierId, java.time.Duration,
 * java.util.function.Supplier)}). Only {@link #GONE} lets expired slots go back as clean: a writer that is
 * merely no longer watched may still land a late copy there.
 */
public enum WriterState {
    /** The writer may still write and is watched: its expired slots stay fenced, given to no one. */
    FENCED,
    /**
     * The writer may still write but its fence is lifted (the connection it was granted on closed before it
     * named the reservation, or its token was revoked): its expired slots go back to the pool and are remembered
     * as an unfenced reservation's, so whoever gets one must send its CRC32Cs.
     */
    UNWATCHED,
    /**
     * The writer can write no more (its process closed every connection), for good: expired slots go back as
     * clean, and those it left remembered as unfenced earlier are forgotten.
     */
    GONE,
    /**
     * The writer will never be watched again, yet may still write for as long as its process lives, which no one
     * can see (kvstore closed its client's last connection: a revoked token's): expired slots go back remembered
     * as {@link #UNWATCHED} ones are, and those it left are kept as an unknown writer's, for good, so nothing of
     * the writer itself (its supplier and what that holds) is kept for them.
     */
    LOST
}
