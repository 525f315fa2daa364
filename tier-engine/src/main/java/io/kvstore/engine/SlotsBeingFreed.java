package io.kvstore.engine;

import io.kvstore.block.TierId;
import io.kvstore.catalog.CatalogEntry;
import java.util.Collection;
import java.util.EnumMap;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Per tier, the slots whose copy no longer looks held (its tier bit is cleared) but which are not free yet: a
 * move between clearing the bit and freeing the slot, or a free deferred until the block's last reader leaves (a
 * copy dropped corrupt, a delete outlasted by a slow reader). A write waiting for room in a full tier keeps
 * waiting while one is counted ({@link Mover#makeRoom}), and tries again when one ended meanwhile. Shared by
 * {@link Mover} and {@link Residency}, the two that clear bits; lock-free.
 */
final class SlotsBeingFreed {

    private final EnumMap<TierId, AtomicInteger> freeing = new EnumMap<>(TierId.class);
    private final EnumMap<TierId, AtomicLong> ended = new EnumMap<>(TierId.class);

    SlotsBeingFreed(Collection<TierId> tiers) {
        for (TierId id : tiers) {
            freeing.put(id, new AtomicInteger());
            ended.put(id, new AtomicLong());
        }
    }

    /** Counts a slot of {@code id} as being freed until the matching {@link #end}; call before its bit is cleared. */
    void begin(TierId id) {
        freeing(id).incrementAndGet();
    }

    /** The slot counted by {@link #begin} is free (or was never taken from the tier): writers may look again. */
    void end(TierId id) {
        freeing(id).decrementAndGet();
        Objects.requireNonNull(ended.get(id), "every configured tier has a counter")
                .incrementAndGet();
    }

    /**
     * Runs {@code free} once {@code entry} has no reader left ({@link CatalogEntry#whenNoReaders}), with a slot in
     * each of {@code tiers} counted as being freed until it has run. The caller counted them already ({@link
     * #begin}) when it cleared their bits.
     */
    void endWhenNoReaders(CatalogEntry entry, Collection<TierId> tiers, Runnable free) {
        entry.whenNoReaders(() -> {
            try {
                free.run();
            } finally {
                for (TierId id : tiers) {
                    end(id);
                }
            }
        });
    }

    /** Whether a slot of {@code id} is being freed now. */
    boolean any(TierId id) {
        return freeing(id).get() > 0;
    }

    /** How many slots of {@code id} were freed since start: a changed count means room may have come meanwhile. */
    long ended(TierId id) {
        return Objects.requireNonNull(ended.get(id), "every configured tier has a counter")
                .get();
    }

    private AtomicInteger freeing(TierId id) {
        return Objects.requireNonNull(freeing.get(id), "every configured tier has a counter");
    }
}
