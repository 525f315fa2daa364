package io.kvstore.engine;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A snapshot of what the engine knows of one block, for callers outside the engine: identity, size,
 * checksum, the tiers holding a readable copy (fastest first) and the holds on it. Changing nothing, it can be handed
 * out freely; it may be stale the moment it is returned.
 */
public record BlockInfo(
        BlockKey key, @Nullable BlockHash parent, int length, int crc32c, Set<TierId> tiers, int pins, int leases) {

    public BlockInfo {
        EnumSet<TierId> ordered = EnumSet.noneOf(TierId.class);
        ordered.addAll(tiers);
        tiers = Collections.unmodifiableSet(ordered);
    }

    public boolean resident() {
        return !tiers.isEmpty();
    }

    public boolean residentIn(TierId tier) {
        return tiers.contains(tier);
    }

    /** The fastest tier holding a copy, or null when none does. */
    public @Nullable TierId fastestTier() {
        return tiers.isEmpty() ? null : tiers.iterator().next();
    }
}
