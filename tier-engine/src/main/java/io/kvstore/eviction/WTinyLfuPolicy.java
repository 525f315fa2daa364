package io.kvstore.eviction;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Policy;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.kvstore.block.BlockKey;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;
import org.jspecify.annotations.Nullable;

/**
 * Window TinyLFU as Caffeine runs it, by delegating to Caffeine itself: a same-thread {@link Cache}
 * of the tier's blocks, weighted by block bytes with the tier's capacity as its maximum, whose eviction
 * order the tier follows. Caffeine brings what a home-made copy lacked: a frequency sketch sized to the
 * cache rather than grown with the population, and a window that adapts by hill climbing instead of a
 * fixed 1%.
 *
 * <p>The tier, not Caffeine, decides when a block leaves: it asks for the coldest block it may evict
 * (pinned, leased and read blocks are skipped) and reports the removal. Since resident bytes never
 * exceed the tier's capacity, Caffeine does not evict on its own, so its admission step (and the jitter
 * in it against keys chosen to collide) never runs: frequency decides through {@link
 * Policy.Eviction#coldest}, which merges the window's and probation's cold ends by sketch frequency, so
 * a one-time newcomer still leaves before a block read again (scan resistance); against collisions block
 * hashes are keyed ({@code BlockHash.keyedHash}). If tracking ever runs ahead of the
 * tier (an insert reported before a removal), the block Caffeine drops is kept as the next victim, so
 * no resident block is ever forgotten.
 *
 * <p>A held block passed over by a victim search leaves the cache until its hold ends, so searches do not
 * walk past it again; it then comes back as a new entry, with the frequency the sketch still holds for it
 * (reads while it was set aside are not counted).
 */
public final class WTinyLfuPolicy implements EvictionPolicy {

    private final Cache<BlockKey, Boolean> cache;
    private final Policy.Eviction<BlockKey, Boolean> order;
    private final LinkedHashSet<BlockKey> droppedByCache = new LinkedHashSet<>();
    private final LinkedHashSet<BlockKey> parked = new LinkedHashSet<>();

    /**
     * @param capacityBytes the tier's capacity: the cache's maximum weight
     * @param bytesOf a resident block's length: its weight
     */
    public WTinyLfuPolicy(long capacityBytes, ToIntFunction<BlockKey> bytesOf) {
        this.cache = Caffeine.newBuilder()
                .executor(Runnable::run)
                .maximumWeight(Math.max(1, capacityBytes))
                .weigher((BlockKey key, Boolean v) -> Math.max(0, bytesOf.applyAsInt(key)))
                .evictionListener((@Nullable BlockKey key, @Nullable Boolean v, RemovalCause cause) -> {
                    if (key != null && cause.wasEvicted()) {
                        droppedByCache.add(key);
                    }
                })
                .build();
        this.order = cache.policy().eviction().orElseThrow();
    }

    @Override
    public EvictionPolicyKind kind() {
        return EvictionPolicyKind.W_TINYLFU;
    }

    @Override
    public void onInsert(BlockKey key, @Nullable BlockKey parent) {
        if (cache.getIfPresent(key) == null && !parked.contains(key)) {
            droppedByCache.remove(key);
            cache.put(key, Boolean.TRUE);
        }
    }

    @Override
    public void onAccess(BlockKey key) {
        // a read through Caffeine is what counts the access in its sketch and its hit sample
        if (cache.getIfPresent(key) == null && droppedByCache.remove(key)) {
            cache.put(key, Boolean.TRUE);
        }
    }

    @Override
    public void onRemove(BlockKey key) {
        cache.invalidate(key);
        droppedByCache.remove(key);
        parked.remove(key);
    }

    @Override
    public @Nullable BlockKey nextVictim(Predicate<BlockKey> evictable, Predicate<BlockKey> held) {
        for (Iterator<BlockKey> it = droppedByCache.iterator(); it.hasNext(); ) {
            BlockKey key = it.next();
            if (evictable.test(key)) {
                return key;
            }
            if (held.test(key)) {
                it.remove();
                parked.add(key);
            }
        }
        List<BlockKey> passedHeld = new ArrayList<>();
        BlockKey victim = order.coldest(entries -> entries.map(Policy.CacheEntry::getKey)
                .filter(key -> {
                    if (evictable.test(key)) {
                        return true;
                    }
                    if (held.test(key)) {
                        passedHeld.add(key);
                    }
                    return false;
                })
                .findFirst()
                .orElse(null));
        for (BlockKey key : passedHeld) { // not inside coldest(): the cache must not change under its walk
            cache.invalidate(key);
            parked.add(key);
        }
        return victim;
    }

    @Override
    public void unpark(BlockKey key) {
        if (parked.remove(key)) {
            cache.put(key, Boolean.TRUE);
        }
    }

    @Override
    public List<BlockKey> coldestFirst() {
        List<BlockKey> keys = new ArrayList<>(droppedByCache);
        keys.addAll(parked);
        keys.addAll(order.coldest(Integer.MAX_VALUE).keySet());
        return keys;
    }

    @Override
    public int size() {
        cache.cleanUp();
        return (int) cache.estimatedSize() + droppedByCache.size() + parked.size();
    }
}
