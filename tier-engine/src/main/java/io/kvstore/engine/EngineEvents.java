package io.kvstore.engine;

import io.kvstore.catalog.BlockKey;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.TierId;

/**
 * What the engine reports as it works, for metrics. Called on the thread doing the work: keep it
 * cheap (counters), never block.
 */
public interface EngineEvents {

    EngineEvents NONE = new EngineEvents() {
    };

    /** A block left {@code tier} by its eviction policy (moved down or dropped). */
    default void evicted(TierId tier, EvictionPolicyKind policy, int bytes) {
    }

    /** A block was copied down from {@code from} to {@code to} on eviction. */
    default void demoted(TierId from, TierId to, int bytes) {
    }

    /** A block was copied up from {@code from} to {@code to} after a hit. */
    default void promoted(TierId from, TierId to, int bytes) {
    }

    /** A copy of {@code key} in {@code tier} failed its checksum and was dropped. */
    default void checksumFailed(TierId tier, BlockKey key) {
    }

    /** Bytes moved between tiers inside this process. */
    default void moved(TierId from, TierId to, long bytes, long nanos) {
    }
}
