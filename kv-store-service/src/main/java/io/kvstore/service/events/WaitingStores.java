package io.kvstore.service.events;

import io.kvstore.block.TierId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Live {@code BlockStored} changes held back during a re-announcement because subscribers have not been told of
 * the block's parent yet (the re-announcement has not reached it): each goes out right after its parent does,
 * and one whose copy is removed meanwhile is forgotten. Publisher thread only; emptied when the re-announcement
 * ends.
 *
 * <p>Bounded: a fast engine storing children of blocks a long re-announcement has not reached yet would
 * otherwise keep them all on the heap (millions on a large catalog). Past {@code capacity} {@link #add} refuses
 * the store; the publisher then counts it dropped and starts over with {@code AllBlocksCleared}, as after a
 * queue overflow (docs/events.md).
 */
final class WaitingStores {

    /** A block of a namespace, by wire hash. */
    record Block(String namespace, long hash) {}

    /** A copy waiting for its parent. */
    record Waiting(TierId tier, long hash) {}

    private final Map<Block, List<Waiting>> byParent = new HashMap<>();
    /** The parent each waiting block waits for. */
    private final Map<Block, Long> parents = new HashMap<>();

    private final int capacity;
    /** Copies waiting: the sum of {@link #byParent}'s list sizes. */
    private int size;

    WaitingStores(int capacity) {
        this.capacity = capacity;
    }

    /**
     * Holds the store of {@code hash}'s copy in {@code tier} until {@code parent} goes out; false, holding nothing,
     * when {@code capacity} copies wait already.
     */
    boolean add(String namespace, long parent, TierId tier, long hash) {
        if (size >= capacity) {
            return false;
        }
        byParent.computeIfAbsent(new Block(namespace, parent), p -> new ArrayList<>())
                .add(new Waiting(tier, hash));
        parents.put(new Block(namespace, hash), parent);
        size++;
        return true;
    }

    /** Forgets the waiting store of this copy, if any: its removal went out. */
    void cancel(String namespace, long hash, TierId tier) {
        Block child = new Block(namespace, hash);
        Long parent = parents.get(child);
        if (parent == null) {
            return;
        }
        Block key = new Block(namespace, parent);
        List<Waiting> list = byParent.get(key);
        if (list == null) {
            return;
        }
        if (list.remove(new Waiting(tier, hash))) {
            size--;
        }
        if (list.stream().noneMatch(w -> w.hash() == hash)) {
            parents.remove(child);
        }
        if (list.isEmpty()) {
            byParent.remove(key);
        }
    }

    /** The copies that waited for {@code parent}, now free to go, or null. */
    @Nullable
    List<Waiting> release(String namespace, long parent) {
        List<Waiting> list = byParent.remove(new Block(namespace, parent));
        if (list != null) {
            size -= list.size();
            for (Waiting w : list) {
                parents.remove(new Block(namespace, w.hash()));
            }
        }
        return list;
    }

    /** Whether no copy waits. */
    boolean isEmpty() {
        return byParent.isEmpty();
    }

    /** Copies still waiting. */
    int size() {
        return size;
    }

    /** Forgets the waiting stores of one namespace (deleted). */
    void forget(String namespace) {
        byParent.entrySet().removeIf(e -> {
            boolean gone = e.getKey().namespace().equals(namespace);
            if (gone) {
                size -= e.getValue().size();
            }
            return gone;
        });
        parents.keySet().removeIf(b -> b.namespace().equals(namespace));
    }

    void clear() {
        size = 0;
        byParent.clear();
        parents.clear();
    }
}
