package io.kvstore.eviction;

import io.kvstore.block.BlockKey;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Evicts leaves first, oldest leaf first, like SGLang's radix cache: a block whose child is resident in
 * the same tier is never chosen, so a tier never keeps a suffix whose prefix it dropped (such a suffix
 * could not be matched: lookups stop at the first missing block).
 *
 * <p>Each tracked block counts its resident children; blocks with none sit in a tree ordered by last
 * access. A child may arrive before its parent (a promotion, say): its parent's count waits in
 * {@code pendingChildren} until the parent arrives.
 *
 * <p>A held leaf passed over by a victim search leaves the tree of leaves until its hold ends, so searches do
 * not walk past it again; accesses still move its tick.
 *
 * <p>Bad links are tolerated: a block that names itself as parent is its own root, and when no leaf can
 * be evicted the oldest evictable block on a parent cycle is (cycles have no leaf, so they would
 * otherwise stay forever; the service refuses both, this is the last line).
 *
 * <p>Cycles are kept track of, not searched for: a tier whose leaves are all held must refuse a store in
 * constant time, not after a walk over every block it holds (a client retrying would cost that walk each
 * time, under the tier's policy lock). A cycle can only close when a block arrives whose children are
 * already here ({@code pendingChildren}), so such a block is noted, and only noted blocks are walked from,
 * once each, by the next search that finds no leaf; blocks found on a cycle sit in a second tree by age
 * (held ones set aside as leaves are), and a removal on a cycle takes the rest of that cycle out of it.
 */
public final class PrefixAwarePolicy implements EvictionPolicy {

    private static final Comparator<Node> BY_AGE = Comparator.comparingLong(n -> n.tick);

    private final HashMap<BlockKey, Node> nodes = new HashMap<>();
    private final HashMap<BlockKey, Integer> pendingChildren = new HashMap<>();
    private final TreeSet<Node> leaves = new TreeSet<>(BY_AGE);
    /** Blocks on a parent cycle, not set aside. */
    private final TreeSet<Node> onCycles = new TreeSet<>(BY_AGE);
    /** Blocks that arrived with children already here and may have closed a cycle: not yet walked from. */
    private final HashSet<Node> mayCloseCycle = new HashSet<>();

    private long clock;
    /** Nodes a victim search has looked at, for tests that bound its cost. */
    private long visited;

    private static final class Node {
        final BlockKey key;
        final BlockKey parent;
        int children;
        long tick;
        /** Set aside while held: out of {@link #leaves} and {@link #onCycles} until {@link #unpark}. */
        boolean parked;
        /** On a parent cycle (so in {@link #onCycles} unless parked). */
        boolean onCycle;

        Node(BlockKey key, BlockKey parent) {
            this.key = key;
            this.parent = parent;
        }
    }

    @Override
    public EvictionPolicyKind kind() {
        return EvictionPolicyKind.PREFIX_AWARE;
    }

    @Override
    public void onInsert(BlockKey key, BlockKey parent) {
        if (key.equals(parent)) {
            parent = null;
        }
        if (nodes.containsKey(key)) {
            onAccess(key);
            return;
        }
        Node node = new Node(key, parent);
        node.tick = ++clock;
        Integer waiting = pendingChildren.remove(key);
        node.children = waiting == null ? 0 : waiting;
        nodes.put(key, node);
        if (node.children == 0) {
            leaves.add(node);
        } else {
            mayCloseCycle.add(node);
        }
        if (parent != null) {
            Node parentNode = nodes.get(parent);
            if (parentNode != null) {
                if (parentNode.children++ == 0) {
                    leaves.remove(parentNode);
                }
            } else {
                pendingChildren.merge(parent, 1, Integer::sum);
            }
        }
    }

    @Override
    public void onAccess(BlockKey key) {
        Node node = nodes.get(key);
        if (node == null) {
            return;
        }
        boolean leaf = leaves.remove(node);
        boolean cycle = node.onCycle && onCycles.remove(node);
        node.tick = ++clock;
        if (leaf) {
            leaves.add(node);
        }
        if (cycle) {
            onCycles.add(node);
        }
    }

    @Override
    public void onRemove(BlockKey key) {
        Node node = nodes.remove(key);
        if (node == null) {
            return;
        }
        leaves.remove(node);
        mayCloseCycle.remove(node);
        if (node.onCycle) {
            onCycles.remove(node);
            // the rest of the cycle is a chain now, ending at the parent link to this block
            for (Node at = nodes.get(node.parent); at != null && at.onCycle; at = nodes.get(at.parent)) {
                at.onCycle = false;
                onCycles.remove(at);
            }
        }
        if (node.children > 0) {
            pendingChildren.put(key, node.children);
        }
        if (node.parent != null) {
            Node parentNode = nodes.get(node.parent);
            if (parentNode != null) {
                if (--parentNode.children == 0 && !parentNode.parked) {
                    leaves.add(parentNode);
                }
            } else {
                pendingChildren.computeIfPresent(node.parent, (k, n) -> n > 1 ? n - 1 : null);
            }
        }
    }

    @Override
    public BlockKey nextVictim(Predicate<BlockKey> evictable, Predicate<BlockKey> held) {
        BlockKey leaf = oldestEvictable(leaves, evictable, held);
        if (leaf != null) {
            return leaf;
        }
        // no leaf can go: the oldest evictable block on a parent cycle, if any
        if (!mayCloseCycle.isEmpty()) {
            findNewCycles();
        }
        return oldestEvictable(onCycles, evictable, held);
    }

    /** The oldest evictable block of {@code nodes}, or null; held ones passed over are set aside. */
    private BlockKey oldestEvictable(TreeSet<Node> nodes, Predicate<BlockKey> evictable, Predicate<BlockKey> held) {
        for (Iterator<Node> it = nodes.iterator(); it.hasNext(); ) {
            Node node = it.next();
            visited++;
            if (evictable.test(node.key)) {
                return node.key;
            }
            if (held.test(node.key)) {
                it.remove();
                node.parked = true;
            }
        }
        return null;
    }

    /**
     * Marks the cycles closed by the blocks in {@link #mayCloseCycle}, then forgets those blocks. Parent links
     * form a functional graph (one parent each), so walks with three colours find every cycle through a
     * walked block, each block visited at most once per call.
     */
    private void findNewCycles() {
        HashMap<Node, Integer> colour = new HashMap<>(); // 1 on the current walk, 2 done
        for (Node start : mayCloseCycle) {
            List<Node> path = new ArrayList<>();
            Node at = start;
            while (at != null && !at.onCycle && !colour.containsKey(at)) {
                visited++;
                colour.put(at, 1);
                path.add(at);
                at = at.parent == null ? null : nodes.get(at.parent);
            }
            if (at != null && Integer.valueOf(1).equals(colour.get(at))) {
                // the walk closed a cycle: it runs from `at` to the end of the path
                for (int i = path.indexOf(at); i < path.size(); i++) {
                    Node n = path.get(i);
                    n.onCycle = true;
                    if (!n.parked) {
                        onCycles.add(n);
                    }
                }
            }
            for (Node n : path) {
                colour.put(n, 2);
            }
        }
        mayCloseCycle.clear();
    }

    @Override
    public void unpark(BlockKey key) {
        Node node = nodes.get(key);
        if (node != null && node.parked) {
            node.parked = false;
            if (node.children == 0) {
                leaves.add(node);
            }
            if (node.onCycle) {
                onCycles.add(node);
            }
        }
    }

    @Override
    public List<BlockKey> coldestFirst() {
        List<Node> all = new ArrayList<>(nodes.values());
        all.sort(BY_AGE);
        List<BlockKey> keys = new ArrayList<>(all.size());
        all.forEach(n -> keys.add(n.key));
        return keys;
    }

    @Override
    public int size() {
        return nodes.size();
    }

    /** How many nodes victim searches have looked at so far (for tests). */
    long nodesVisited() {
        return visited;
    }

    /** Whether the block has no resident child in this tier (for tests). */
    boolean isLeaf(BlockKey key) {
        Node node = nodes.get(key);
        return node != null && node.children == 0;
    }
}
