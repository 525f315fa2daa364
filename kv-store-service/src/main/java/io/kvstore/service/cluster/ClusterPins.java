package io.kvstore.service.cluster;

import io.kvstore.block.BlockKey;
import io.kvstore.engine.TierEngine;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * This node's share of the cluster's pins. A cluster pin names a block, not a copy: it is kept in etcd
 * ({@code <prefix>settings/pins/<ns>/<hash>}, see {@link ClusterSettings}) and each node pins the block
 * while it holds it: when the pin is set, when its settings mirror sees the pin (a node that joins later
 * reads every pin when it starts), and at each membership renewal for blocks that arrived since (stored
 * there, or stored to it as a run's new owner after a join). Each renewal applies etcd's pins as last seen
 * again, so an unpin this node was told of but whose delete never reached etcd does not leave the block
 * unpinned everywhere while etcd still pins it. A node pins a block once for the cluster however often the
 * block is pinned, so pins read again from etcd never stack up.
 */
public final class ClusterPins {

    private final TierEngine engine;
    private Set<BlockKey> wanted = new HashSet<>();
    private final Set<BlockKey> pinnedHere = new HashSet<>();
    /** Pins added directly ({@link #add}), by the etcd revision that wrote them, until a snapshot reaches it. */
    private final Map<BlockKey, Long> addedAt = new HashMap<>();
    /** The last snapshot of etcd's pins ({@link #wanted}) and its revision. */
    private Set<BlockKey> snapshot = Set.of();

    private long snapshotRevision;

    public ClusterPins(TierEngine engine) {
        this.engine = engine;
    }

    /**
     * The cluster's pins as etcd holds them at {@code revision}: unpins what left the set, pins what this node
     * holds. A pin added directly at a later revision than the snapshot's ({@link #add}) stays: the watch
     * that delivers a snapshot can lag behind the write this node was told of, and such a snapshot does not
     * show the pin yet. Unpinning there, even until the next snapshot, left the block free to be evicted.
     */
    synchronized void wanted(Set<BlockKey> keys, long revision) {
        snapshot = Set.copyOf(keys);
        snapshotRevision = revision;
        Set<BlockKey> next = new HashSet<>(keys);
        for (Iterator<Map.Entry<BlockKey, Long>> it = addedAt.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<BlockKey, Long> added = it.next();
            if (added.getValue() > revision) {
                next.add(added.getKey()); // written after this snapshot: not in it yet
            } else {
                it.remove(); // the snapshot has caught up: from now on it says whether the pin stands
            }
        }
        for (Iterator<BlockKey> it = pinnedHere.iterator(); it.hasNext(); ) {
            BlockKey key = it.next();
            if (!next.contains(key)) {
                engine.unpin(List.of(key));
                it.remove();
            }
        }
        wanted = next;
        pinHeld();
    }

    /**
     * Adds pins, just written to etcd at {@code revision} (0 when unknown); how many of {@code keys} this
     * node now holds pinned.
     */
    synchronized int add(Collection<BlockKey> keys, long revision) {
        for (BlockKey key : keys) {
            if (revision != 0 && revision <= snapshotRevision && !snapshot.contains(key)) {
                continue; // a snapshot at or past the write that pinned it no longer has it: unpinned since
            }
            wanted.add(key);
            addedAt.merge(key, revision, Math::max);
        }
        pinHeld();
        return pinnedOf(keys);
    }

    /** Removes pins (just deleted from etcd); how many of {@code keys} this node unpinned. */
    synchronized int remove(Collection<BlockKey> keys) {
        int n = 0;
        for (BlockKey key : keys) {
            wanted.remove(key);
            addedAt.remove(key);
            if (pinnedHere.remove(key)) {
                engine.unpin(List.of(key));
                n++;
            }
        }
        return n;
    }

    /**
     * At each renewal: etcd's pins as last seen, so an unpin told here whose etcd delete never happened
     * (etcd down, the node asked died) is undone, and blocks that arrived since are pinned.
     */
    synchronized void renewed() {
        wanted(snapshot, snapshotRevision);
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
