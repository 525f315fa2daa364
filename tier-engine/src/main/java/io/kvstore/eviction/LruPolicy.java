package io.kvstore.eviction;

import io.kvstore.block.BlockKey;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * Least recently used first: an access-ordered hash map whose head is the coldest block, each block with
 * the tick of its last use.
 *
 * <p>A held block passed over by a victim search is set aside with its tick, and accesses keep moving its
 * tick. When its hold ends it cannot go back into the middle of the hash map, so it waits in a small tree by
 * tick, and victim searches merge the two by tick: the order is exactly last use, as if it never left. A
 * returned block read again moves to the hash map's tail like any other.
 */
public final class LruPolicy implements EvictionPolicy {

    /** Ticks ascend from the head: every put or access gives the block the newest tick. */
    private final LinkedHashMap<BlockKey, Long> order = new LinkedHashMap<>(1024, 0.75f, true);
    /** Blocks back from being set aside, by tick. */
    private final TreeMap<Long, BlockKey> returned = new TreeMap<>();
    /** The tick of each block in {@link #returned}. */
    private final HashMap<BlockKey, Long> returnedTicks = new HashMap<>();
    /** Blocks set aside while held, with their ticks. */
    private final HashMap<BlockKey, Long> parked = new HashMap<>();

    private long clock;

    @Override
    public EvictionPolicyKind kind() {
        return EvictionPolicyKind.LRU;
    }

    @Override
    public void onInsert(BlockKey key, BlockKey parent) {
        if (order.replace(key, ++clock) == null && !touchAside(key)) {
            order.put(key, clock);
        }
    }

    @Override
    public void onAccess(BlockKey key) {
        if (order.replace(key, ++clock) == null) {
            touchAside(key);
        }
    }

    /** A use of a block outside {@link #order}: true when it was tracked. */
    private boolean touchAside(BlockKey key) {
        if (parked.replace(key, clock) != null) {
            return true;
        }
        Long tick = returnedTicks.remove(key);
        if (tick == null) {
            return false;
        }
        returned.remove(tick);
        order.put(key, clock);
        return true;
    }

    @Override
    public void onRemove(BlockKey key) {
        if (order.remove(key) == null && parked.remove(key) == null) {
            Long tick = returnedTicks.remove(key);
            if (tick != null) {
                returned.remove(tick);
            }
        }
    }

    @Override
    public BlockKey nextVictim(Predicate<BlockKey> evictable, Predicate<BlockKey> held) {
        Iterator<Map.Entry<BlockKey, Long>> main = order.entrySet().iterator();
        Iterator<Map.Entry<Long, BlockKey>> back = returned.entrySet().iterator();
        Map.Entry<BlockKey, Long> m = main.hasNext() ? main.next() : null;
        Map.Entry<Long, BlockKey> b = back.hasNext() ? back.next() : null;
        while (m != null || b != null) {
            boolean fromMain = b == null || (m != null && m.getValue() < b.getKey());
            BlockKey key = fromMain ? m.getKey() : b.getValue();
            long tick = fromMain ? m.getValue() : b.getKey();
            if (evictable.test(key)) {
                return key;
            }
            boolean park = held.test(key);
            if (park) {
                parked.put(key, tick);
            }
            if (fromMain) {
                if (park) {
                    main.remove();
                }
                m = main.hasNext() ? main.next() : null;
            } else {
                if (park) {
                    back.remove();
                    returnedTicks.remove(key);
                }
                b = back.hasNext() ? back.next() : null;
            }
        }
        return null;
    }

    @Override
    public void unpark(BlockKey key) {
        Long tick = parked.remove(key);
        if (tick != null) {
            returned.put(tick, key);
            returnedTicks.put(key, tick);
        }
    }

    @Override
    public List<BlockKey> coldestFirst() {
        List<Map.Entry<BlockKey, Long>> all = new ArrayList<>(order.entrySet());
        all.addAll(returnedTicks.entrySet());
        all.addAll(parked.entrySet());
        all.sort(Map.Entry.comparingByValue(Comparator.naturalOrder()));
        List<BlockKey> keys = new ArrayList<>(all.size());
        all.forEach(e -> keys.add(e.getKey()));
        return keys;
    }

    @Override
    public int size() {
        return order.size() + returned.size() + parked.size();
    }
}
