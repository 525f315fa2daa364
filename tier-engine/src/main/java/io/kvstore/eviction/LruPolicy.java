package io.kvstore.eviction;

import io.kvstore.block.BlockKey;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.Predicate;

/** Least recently used first: an access-ordered hash map whose head is the coldest block. */
public final class LruPolicy implements EvictionPolicy {

    private final LinkedHashMap<BlockKey, Boolean> order = new LinkedHashMap<>(1024, 0.75f, true);

    @Override
    public EvictionPolicyKind kind() {
        return EvictionPolicyKind.LRU;
    }

    @Override
    public void onInsert(BlockKey key, BlockKey parent) {
        order.put(key, Boolean.TRUE);
    }

    @Override
    public void onAccess(BlockKey key) {
        order.get(key);
    }

    @Override
    public void onRemove(BlockKey key) {
        order.remove(key);
    }

    @Override
    public BlockKey nextVictim(Predicate<BlockKey> evictable) {
        for (BlockKey key : order.keySet()) {
            if (evictable.test(key)) {
                return key;
            }
        }
        return null;
    }

    @Override
    public List<BlockKey> coldestFirst() {
        return new ArrayList<>(order.keySet());
    }

    @Override
    public int size() {
        return order.size();
    }
}
