package io.kvstore.eviction;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

class PrefixAwarePolicyTest {

    private static BlockKey k(int id) {
        return new BlockKey("m", BlockHash.ofLong(id));
    }

    @Test
    void aFullTierWhoseLeavesAreAllHeldRefusesEachRetryWithoutWalkingItsBlocks() {
        long small = nodesVisitedPerRefusal(1_000);
        long large = nodesVisitedPerRefusal(100_000);
        assertThat(large)
                .as("nodes looked at per refused search, 100,000 blocks vs 1,000")
                .isEqualTo(small);
        assertThat(large).isLessThanOrEqualTo(1);
    }

    /** A tier of chains of four blocks whose tails are all pinned: what each retry of a refused store costs. */
    private static long nodesVisitedPerRefusal(int blocks) {
        PrefixAwarePolicy policy = new PrefixAwarePolicy();
        for (int i = 0; i < blocks; i++) {
            policy.onInsert(k(i), i % 4 == 0 ? null : k(i - 1));
        }
        Predicate<BlockKey> held = key -> true;
        assertThat(policy.nextVictim(key -> false, held)).isNull(); // the first search sets the held tails aside
        long before = policy.nodesVisited();
        int retries = 10;
        for (int i = 0; i < retries; i++) {
            assertThat(policy.nextVictim(key -> false, held)).isNull();
        }
        return (policy.nodesVisited() - before) / retries;
    }

    @Test
    void aCycleClosedAfterARefusedSearchIsStillEvicted() {
        PrefixAwarePolicy policy = new PrefixAwarePolicy();
        Set<BlockKey> held = new HashSet<>(Set.of(k(3)));
        policy.onInsert(k(1), k(3)); // 3 is not here yet: 1 waits for its parent
        policy.onInsert(k(2), k(1));
        policy.onInsert(k(9), null);
        held.add(k(2));
        held.add(k(9));
        assertThat(policy.nextVictim(key -> !held.contains(key), held::contains))
                .isNull();
        policy.onInsert(k(3), k(2)); // closes 1 -> 3 -> 2 -> 1
        assertThat(policy.nextVictim(key -> !held.contains(key), held::contains))
                .isEqualTo(k(1));
        held.remove(k(2));
        policy.unpark(k(2));
        policy.onAccess(k(1));
        assertThat(policy.nextVictim(key -> !held.contains(key), held::contains))
                .isEqualTo(k(2));
        policy.onRemove(k(2)); // breaks the cycle: 3 -> 2 is gone, and 1 lost its child 2
        assertThat(policy.nextVictim(key -> !held.contains(key), held::contains))
                .isEqualTo(k(1));
        policy.onRemove(k(1)); // 3 is a leaf now, and held
        assertThat(policy.nextVictim(key -> !held.contains(key), held::contains))
                .isNull();
        held.remove(k(3));
        policy.unpark(k(3));
        assertThat(policy.nextVictim(key -> !held.contains(key), held::contains))
                .isEqualTo(k(3));
    }

    /**
     * Random inserts (parents chosen among the same few keys, so chains, self-links and cycles all occur),
     * accesses, removals and holds, each followed by a victim search compared with a reference that
     * recomputes leaves and cycles from scratch.
     */
    @Test
    void victimsMatchAReferenceThatRecomputesLeavesAndCycles() {
        long seed = new SplittableRandom().nextLong();
        System.out.println("PrefixAwarePolicyTest seed " + seed);
        SplittableRandom random = new SplittableRandom(seed);
        for (int run = 0; run < 200; run++) {
            PrefixAwarePolicy policy = new PrefixAwarePolicy();
            Reference reference = new Reference();
            Set<BlockKey> held = new HashSet<>();
            Set<BlockKey> busy = new HashSet<>();
            for (int step = 0; step < 300; step++) {
                BlockKey key = k(random.nextInt(24));
                switch (random.nextInt(8)) {
                    case 0, 1, 2 -> {
                        BlockKey parent = random.nextInt(5) == 0 ? null : k(random.nextInt(24));
                        policy.onInsert(key, parent);
                        reference.insert(key, parent);
                    }
                    case 3 -> {
                        policy.onAccess(key);
                        reference.access(key);
                    }
                    case 4 -> {
                        policy.onRemove(key);
                        reference.remove(key);
                    }
                    case 5 -> {
                        if (!held.remove(key)) {
                            held.add(key);
                        } else {
                            policy.unpark(key);
                        }
                    }
                    default -> {
                        if (!busy.remove(key)) {
                            busy.add(key);
                        }
                    }
                }
                Predicate<BlockKey> evictable = b -> !held.contains(b) && !busy.contains(b);
                assertThat(policy.nextVictim(evictable, held::contains))
                        .as("seed %d, run %d, step %d", seed, run, step)
                        .isEqualTo(reference.victim(evictable));
            }
        }
    }

    /** PREFIX_AWARE's order recomputed from scratch at each question. */
    private static final class Reference {
        private final Map<BlockKey, @Nullable BlockKey> parents = new HashMap<>();
        private final Map<BlockKey, Long> ticks = new HashMap<>();
        private long clock;

        void insert(BlockKey key, @Nullable BlockKey parent) {
            if (!parents.containsKey(key)) {
                parents.put(key, key.equals(parent) ? null : parent);
            }
            ticks.put(key, ++clock);
        }

        void access(BlockKey key) {
            if (ticks.containsKey(key)) {
                ticks.put(key, ++clock);
            }
        }

        void remove(BlockKey key) {
            parents.remove(key);
            ticks.remove(key);
        }

        @Nullable
        BlockKey victim(Predicate<BlockKey> evictable) {
            BlockKey leaf = oldest(key -> evictable.test(key) && !parents.containsValue(key));
            return leaf != null ? leaf : oldest(key -> evictable.test(key) && onCycle(key));
        }

        private boolean onCycle(BlockKey key) {
            BlockKey at = parents.get(key);
            for (int i = 0; at != null && i <= parents.size(); i++) {
                if (at.equals(key)) {
                    return true;
                }
                at = parents.get(at);
            }
            return false;
        }

        private @Nullable BlockKey oldest(Predicate<BlockKey> which) {
            BlockKey best = null;
            for (BlockKey key : ticks.keySet()) {
                if (which.test(key) && (best == null || ticks.get(key) < ticks.get(best))) {
                    best = key;
                }
            }
            return best;
        }
    }
}
