package io.kvstore.eviction;

import io.kvstore.block.BlockKey;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Least frequently used first, with dynamic aging (LFU-DA, Arlitt et al. 2000).
 *
 * <p>Plain LFU never forgets: a block that was hot yesterday outranks today's working set forever.
 * LFU-DA keeps an inflation value {@code L}, raised to the priority of each evicted block; a block's
 * priority is {@code L + hits} at its last access, so blocks that stop being used sink below newer
 * ones once {@code L} passes them, without a periodic sweep over all entries. Ties go to the least
 * recently used. Order is kept in a tree: O(log n) per access. A held block passed over by a victim search
 * leaves the tree and keeps its priority and tick (accesses still move them); when its hold ends it goes back
 * where they put it.
 */
public final class LfuPolicy implements EvictionPolicy {

    private static final Comparator<Node> ORDER =
            Comparator.comparingLong((Node n) -> n.priority).thenComparingLong(n -> n.tick);

    private final HashMap<BlockKey, Node> nodes = new HashMap<>();
    private final TreeSet<Node> byPriority = new TreeSet<>(ORDER);
    private long inflation;
    private long clock;

    private static final class Node {
        final BlockKey key;
        long hits;
        long priority;
        long tick;
        /** Offered as a victim since its last access: its removal is an eviction, which ages the rest. */
        boolean offered;
        /** Set aside while held: out of {@link #byPriority} until {@link #unpark}. */
        boolean parked;

        Node(BlockKey key) {
            this.key = key;
        }
    }

    @Override
    public EvictionPolicyKind kind() {
        return EvictionPolicyKind.LFU;
    }

    @Override
    public void onInsert(BlockKey key, BlockKey parent) {
        Node node = nodes.get(key);
        if (node != null) {
            onAccess(key);
            return;
        }
        node = new Node(key);
        node.hits = 1;
        node.priority = inflation + 1;
        node.tick = ++clock;
        nodes.put(key, node);
        byPriority.add(node);
    }

    @Override
    public void onAccess(BlockKey key) {
        Node node = nodes.get(key);
        if (node == null) {
            return;
        }
        if (!node.parked) {
            byPriority.remove(node);
        }
        node.hits++;
        node.priority = inflation + node.hits;
        node.tick = ++clock;
        node.offered = false;
        if (!node.parked) {
            byPriority.add(node);
        }
    }

    @Override
    public void onRemove(BlockKey key) {
        Node node = nodes.remove(key);
        if (node != null) {
            // Aging follows evictions: of the coldest, or of the block offered as a victim (the coldest may be
            // pinned or leased and skipped for a while); deleting a hot block must not inflate L.
            if (node.offered || (!node.parked && node == byPriority.first())) {
                inflation = Math.max(inflation, node.priority);
            }
            if (!node.parked) {
                byPriority.remove(node);
            }
        }
    }

    @Override
    public BlockKey nextVictim(Predicate<BlockKey> evictable, Predicate<BlockKey> held) {
        return nextVictim(evictable, held, key -> false);
    }

    /** Only the block returned is marked offered: the one a search stopped at was not (its delete ages nothing). */
    @Override
    public BlockKey nextVictim(Predicate<BlockKey> evictable, Predicate<BlockKey> held, Predicate<BlockKey> stop) {
        for (Iterator<Node> it = byPriority.iterator(); it.hasNext(); ) {
            Node node = it.next();
            if (evictable.test(node.key)) {
                node.offered = true;
                return node.key;
            }
            if (stop.test(node.key)) {
                return null;
            }
            if (held.test(node.key)) {
                it.remove();
                node.parked = true;
            }
        }
        return null;
    }

    @Override
    public void unpark(BlockKey key) {
        Node node = nodes.get(key);
        if (node != null && node.parked) {
            node.parked = false;
            byPriority.add(node);
        }
    }

    @Override
    public List<BlockKey> coldestFirst() {
        List<Node> all = new ArrayList<>(nodes.values());
        all.sort(ORDER);
        List<BlockKey> keys = new ArrayList<>(all.size());
        all.forEach(n -> keys.add(n.key));
        return keys;
    }

    @Override
    public int size() {
        return nodes.size();
    }

    /** The block's current priority (for tests and diagnostics); -1 when not tracked. */
    long priorityOf(BlockKey key) {
        Node node = nodes.get(key);
        return node == null ? -1 : node.priority;
    }
}
