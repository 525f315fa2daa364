package io.kvstore.service.cluster;

import io.kvstore.block.BlockKey;
import io.kvstore.engine.TierEngine;
import java.util.Collection;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * This node's share of the cluster's pins. A cluster pin names a block, not a copy: it is kept in etcd
 * ({@code <prefix>settings/pins/<ns>/<hash>}, see {@link ClusterSettings}) and each node pins the block
 * while it holds it: when the pin is set, when its settings mirror sees the pin (a node that joins later
 * reads every pin when it starts), and at each membership renewal for blocks that arrived since (stored
 * there, or stored to it as a run's new owner after a join). A node pins a block once for the cluster
 * however often the block is pinned, so pins read again from etcd never stack up.
 */
public final class ClusterPins {

    private final TierEngine engine;
    private Set<BlockKey> wanted = new HashSet<>();
    private final Set<BlockKey> pinnedHere = new HashSet<>();

    public ClusterPins(TierEngine engine) {
        this.engine = engine;
    }

    /** The cluster's pins as etcd holds them now: unpins what left the set, pins what this node holds. */
    synchronized void wanted(Set<BlockKey> keys) {
        for (Iterator<BlockKey> it = pinnedHere.iterator(); it.hasNext(); ) {
            BlockKey key = it.next();
            if (!keys.contains(key)) {
                engine.unpin(List.of(key));
                it.remove();
            }
        }
        wanted = new HashSet<>(keys);
        pinHeld();
    }

    /** Adds pins (just written to etcd); how many of {@code keys} this node now holds pinned. */
    synchronized int add(Collection<BlockKey> keys) {
        wanted.addAll(keys);
        pinHeld();
        return pinnedOf(keys);
    }

    /** Removes pins (just deleted from etcd); how many of {@code keys} this node unpinned. */
    synchronized int remove(Collection<BlockKey> keys) {
        int n = 0;
        for (BlockKey key : keys) {
            wanted.remove(key);
            if (pinnedHere.remove(key)) {
                engine.unpin(List.of(key));
                n++;
            }
        }
        return n;
    }

    /** Pins the blocks the cluster pins that this node holds and has not pinned yet. */
    synchronized void pinHeld() {
        for (BlockKey key : wanted) {
            if (!pinnedHere.contains(key) && engine.pin(List.of(key)) == 1) {
                pinnedHere.add(key);
            }
        }
    }

    /** How many blocks this node holds pinned for the cluster. */
    synchronized int pinnedHere() {
        return pinnedHere.size();
    }

    private int pinnedOf(Collection<BlockKey> keys) {
        int n = 0;
        for (BlockKey key : keys) {
            if (pinnedHere.contains(key)) {
                n++;
            }
        }
        return n;
    }
}
