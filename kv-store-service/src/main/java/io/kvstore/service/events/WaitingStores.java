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
 * and one whose copy is removed meanwhile is forgotten. Publisher thread only; as large as the live stores of
 * children of blocks not yet re-announced, and emptied when the re-announcement ends.
 */
final class WaitingStores {

    /** A block of a namespace, by wire hash. */
    record Block(String namespace, long hash) {}

    /** A copy waiting for its parent. */
    record Waiting(TierId tier, long hash) {}

    private final Map<Block, List<Waiting>> byParent = new HashMap<>();
    /** The parent each waiting block waits for. */
    private final Map<Block, Long> parents = new HashMap<>();

    void add(String namespace, long parent, TierId tier, long hash) {
        byParent.computeIfAbsent(new Block(namespace, parent), p -> new ArrayList<>())
                .add(new Waiting(tier, hash));
        parents.put(new Block(namespace, hash), parent);
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
        list.remove(new Waiting(tier, hash));
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
        int n = 0;
        for (List<Waiting> list : byParent.values()) {
            n += list.size();
        }
        return n;
    }

    /** Forgets the waiting stores of one namespace (deleted). */
    void forget(String namespace) {
        byParent.keySet().removeIf(b -> b.namespace().equals(namespace));
        parents.keySet().removeIf(b -> b.namespace().equals(namespace));
    }

    void clear() {
        byParent.clear();
        parents.clear();
    }
}
