package io.kvstore.eviction;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Policy;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.kvstore.block.BlockKey;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;
import org.jspecify.annotations.Nullable;

/**
 * Window TinyLFU as Caffeine runs it, by delegating to Caffeine itself: a same-thread {@link Cache}
 * of the tier's blocks, weighted by block bytes with the tier's capacity as its maximum, whose eviction
 * order the tier follows. Caffeine brings what a home-made copy lacked: a frequency sketch sized to the
 * cache rather than grown with the population, a window that adapts by hill climbing instead of a fixed
 * 1%, and admission jitter against keys chosen to collide (block hashes come from clients).
 *
 * <p>The tier, not Caffeine, decides when a block leaves: it asks for the coldest block it may evict
 * (pinned, leased and read blocks are skipped) and reports the removal. Since resident bytes never
 * exceed the tier's capacity, Caffeine does not evict on its own; if tracking ever runs ahead of the
 * tier (an insert reported before a removal), the block Caffeine drops is kept as the next victim, so
 * no resident block is ever forgotten.
 */
public final class WTinyLfuPolicy implements EvictionPolicy {

    private final Cache<BlockKey, Boolean> cache;
    private final Policy.Eviction<BlockKey, Boolean> order;
    private final LinkedHashSet<BlockKey> droppedByCache = new LinkedHashSet<>();

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
        if (cache.getIfPresent(key) == null) {
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
    }

    @Override
    public @Nullable BlockKey nextVictim(Predicate<BlockKey> evictable) {
        for (BlockKey key : droppedByCache) {
            if (evictable.test(key)) {
                return key;
            }
        }
        return order.coldest(entries -> entries.map(Policy.CacheEntry::getKey)
                .filter(evictable)
                .findFirst()
                .orElse(null));
    }

    @Override
    public List<BlockKey> coldestFirst() {
        List<BlockKey> keys = new ArrayList<>(droppedByCache);
        keys.addAll(order.coldest(Integer.MAX_VALUE).keySet());
        return keys;
    }

    @Override
    public int size() {
        cache.cleanUp();
        return (int) cache.estimatedSize() + droppedByCache.size();
    }
}
