package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;

/**
 * What the engine reports as it works, for metrics. Called on the thread doing the work: keep it
 * cheap (counters), never block.
 */
public interface EngineEvents {

    EngineEvents NONE = new EngineEvents() {};

    /** A block left {@code tier} by its eviction policy (moved down or dropped). */
    default void evicted(TierId tier, EvictionPolicyKind policy, int bytes) {}

    /** A block was copied down from {@code from} to {@code to} on eviction. */
    default void demoted(TierId from, TierId to, int bytes) {}

    /** A block was copied up from {@code from} to {@code to} after a hit. */
    default void promoted(TierId from, TierId to, int bytes) {}

    /** A copy of {@code key} in {@code tier} failed its checksum and was dropped. */
    default void checksumFailed(TierId tier, BlockKey key) {}

    /** The device could not read back the copy of {@code key} in {@code tier}; it was dropped. */
    default void readFailed(TierId tier, BlockKey key) {}

    /** Bytes moved between tiers inside this process. */
    default void moved(TierId from, TierId to, long bytes, long nanos) {}

    /**
     * A readable copy of {@code block} now exists in {@code tier}: stored, committed, demoted or promoted
     * into it, or found there on restart. Called after the catalog shows the copy, once per copy.
     */
    default void copyAdded(TierId tier, BlockRecord block) {}

    /**
     * The copy of {@code key} in {@code tier} is no longer readable: evicted, demoted out, deleted or
     * dropped as corrupt. Called after the catalog stopped showing it, once per copy that was added.
     */
    default void copyRemoved(TierId tier, BlockKey key, int length) {}

    /**
     * A namespace's blocks were deleted ({@code TierEngine#deleteNamespace}): called after the removal of every
     * copy this call deleted, on the same thread, so it follows them; the namespace may be declared again
     * (another model, another layout) from now on.
     */
    default void namespaceDeleted(String namespace) {}

    /**
     * Copies out of {@code from} into {@code to} began to fail (a full or failing disk): blocks stay in
     * {@code from}. Called once per change of state, with the first failure's reason.
     */
    default void demotionFailing(TierId from, TierId to, String reason) {}

    /** Copies out of {@code from} work again after {@link #demotionFailing}. */
    default void demotionRecovered(TierId from) {}

    /**
     * {@code count} reservations passed their expiry uncommitted (at one sweep): each is reported once, when it
     * expires, whether its slots go back then or stay fenced while its writer may still write.
     */
    default void reservationsExpired(int count) {}
}
