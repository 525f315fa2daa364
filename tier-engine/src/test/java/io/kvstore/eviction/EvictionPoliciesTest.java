package io.kvstore.eviction;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class EvictionPoliciesTest {

    private static BlockKey k(int id) {
        return new BlockKey("ns", BlockHash.ofLong(id));
    }

    @Test
    void lruEvictsLeastRecentlyUsed() {
        EvictionPolicy lru = new LruPolicy();
        for (int i = 1; i <= 3; i++) {
            lru.onInsert(k(i), null);
        }
        lru.onAccess(k(1));
        assertThat(lru.nextVictim(key -> true)).isEqualTo(k(2));
        assertThat(lru.nextVictim(key -> !key.equals(k(2)))).isEqualTo(k(3));
    }

    @Test
    void lfuEvictsLeastFrequentlyUsedAndAgesOldPopularity() {
        LfuPolicy lfu = new LfuPolicy();
        lfu.onInsert(k(1), null);
        for (int i = 0; i < 5; i++) {
            lfu.onAccess(k(1));
        }
        lfu.onInsert(k(2), null);
        lfu.onAccess(k(2));
        lfu.onInsert(k(3), null);
        assertThat(lfu.nextVictim(key -> true)).isEqualTo(k(3));
        // Evict the cold ones repeatedly: each eviction raises the inflation value, so blocks inserted
        // later start above block 1's stale count and block 1 eventually becomes the victim.
        long[] next = {100};
        for (int round = 0; round < 10; round++) {
            BlockKey victim = lfu.nextVictim(key -> true);
            lfu.onRemove(victim);
            lfu.onInsert(k((int) next[0]++), null);
            lfu.onAccess(k((int) next[0] - 1));
        }
        assertThat(lfu.coldestFirst()).doesNotContain(k(1));
    }

    @Test
    void lfuAgesOldPopularityWhileItsColdestBlockIsPinned() {
        LfuPolicy lfu = new LfuPolicy();
        BlockKey pinned = k(0);
        lfu.onInsert(pinned, null); // pinned, never read again: it stays at the head of the order
        lfu.onInsert(k(1), null);
        for (int i = 0; i < 5; i++) {
            lfu.onAccess(k(1)); // popular once, then never used again
        }
        // today's working set streams through; the tier evicts what the policy offers, skipping the pin
        int next = 100;
        for (int round = 0; round < 50; round++) {
            lfu.onInsert(k(next), null);
            lfu.onAccess(k(next));
            next++;
            BlockKey victim = lfu.nextVictim(key -> !key.equals(pinned));
            lfu.onRemove(victim);
        }
        // as without the pin, evictions raise the inflation value and block 1's stale count fades
        assertThat(lfu.coldestFirst()).contains(pinned).doesNotContain(k(1));
    }

    /**
     * Hits on a block reused every 300 inserts while one-time blocks stream through a 200-block tier, driven
     * as a tier drives it: the victim leaves before the newcomer is inserted, so tracking never exceeds the
     * capacity and Caffeine never evicts (nor runs its admission step) on its own.
     */
    private static int hitsOnReusedBlock(EvictionPolicy policy) {
        int capacity = 200;
        BlockKey hot = k(1);
        Set<BlockKey> resident = new HashSet<>();
        int hits = 0;
        for (int i = 0; i < 12_000; i++) {
            BlockKey next = i % 300 == 0 ? hot : k(1000 + i);
            if (resident.contains(next)) {
                policy.onAccess(next);
                hits++;
                continue;
            }
            if (resident.size() == capacity) {
                BlockKey victim = policy.nextVictim(key -> true);
                policy.onRemove(victim);
                resident.remove(victim);
            }
            policy.onInsert(next, null);
            resident.add(next);
        }
        return hits;
    }

    @Test
    void wTinyLfuKeepsAReusedBlockThatLruLosesToAScan() {
        int lruHits = hitsOnReusedBlock(new LruPolicy());
        int tinyLfuHits = hitsOnReusedBlock(new WTinyLfuPolicy(200, key -> 1));
        assertThat(lruHits).isZero();
        assertThat(tinyLfuHits).isGreaterThanOrEqualTo(30); // 39 reuses after the first insert
    }

    @Test
    void prefixAwareNeverEvictsABlockWithAResidentChild() {
        PrefixAwarePolicy policy = new PrefixAwarePolicy();
        // chain 1 <- 2 <- 3, and a second chain 10 <- 11
        policy.onInsert(k(1), null);
        policy.onInsert(k(2), k(1));
        policy.onInsert(k(3), k(2));
        policy.onInsert(k(10), null);
        policy.onInsert(k(11), k(10));
        policy.onAccess(k(1));
        assertThat(policy.isLeaf(k(1))).isFalse();
        // leaves are 3 and 11; 3 is older
        assertThat(policy.nextVictim(key -> true)).isEqualTo(k(3));
        policy.onRemove(k(3));
        // 2 became a leaf; it was last touched before 11
        assertThat(policy.nextVictim(key -> true)).isEqualTo(k(2));
        policy.onRemove(k(2));
        assertThat(policy.nextVictim(key -> true)).isEqualTo(k(11));
        policy.onRemove(k(11));
        // block 1 was accessed after 10 was inserted: 10 is now the older leaf
        assertThat(policy.nextVictim(key -> true)).isEqualTo(k(10));
    }

    @Test
    void prefixAwareCountsAChildThatArrivedBeforeItsParent() {
        PrefixAwarePolicy policy = new PrefixAwarePolicy();
        policy.onInsert(k(2), k(1));
        policy.onInsert(k(1), null);
        assertThat(policy.isLeaf(k(1))).isFalse();
        assertThat(policy.nextVictim(key -> true)).isEqualTo(k(2));
    }

    @Test
    void switchingPolicyKeepsEveryTrackedBlock() {
        Map<BlockKey, BlockKey> parents = new HashMap<>();
        TierPolicy tierPolicy = new TierPolicy(EvictionPolicyKind.LRU, 1 << 20, parents::get, key -> 1, key -> false);
        for (int i = 1; i <= 50; i++) {
            BlockKey parent = i % 10 == 1 ? null : k(i - 1);
            parents.put(k(i), parent);
            tierPolicy.onInsert(k(i), parent);
        }
        for (EvictionPolicyKind kind : List.of(
                EvictionPolicyKind.LFU,
                EvictionPolicyKind.W_TINYLFU,
                EvictionPolicyKind.PREFIX_AWARE,
                EvictionPolicyKind.LRU)) {
            tierPolicy.switchTo(kind);
            assertThat(tierPolicy.kind()).isEqualTo(kind);
            assertThat(tierPolicy.size()).isEqualTo(50);
        }
        tierPolicy.switchTo(EvictionPolicyKind.PREFIX_AWARE);
        // under PREFIX_AWARE only chain tails (10, 20, ...) are candidates
        BlockKey victim = tierPolicy.nextVictim(key -> true);
        assertThat(List.of(k(10), k(20), k(30), k(40), k(50))).contains(victim);
    }

    @Test
    void policyNamesParseCaseInsensitivelyAndListTheValidOnes() {
        assertThat(EvictionPolicyKind.parse("w-tinylfu")).isEqualTo(EvictionPolicyKind.W_TINYLFU);
        assertThat(EvictionPolicyKind.parse(" prefix_aware ")).isEqualTo(EvictionPolicyKind.PREFIX_AWARE);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> EvictionPolicyKind.parse("FIFO"))
                .hasMessageContaining("LRU, LFU, W_TINYLFU, PREFIX_AWARE");
    }

    @Test
    void aLookupsPrefixCountsAsOneAccessPerBlockInOrder() {
        TierPolicy policy = new TierPolicy(EvictionPolicyKind.LRU, 1 << 20, key -> null, key -> 1, key -> false);
        for (int i = 1; i <= 5; i++) {
            policy.onInsert(k(i), null);
        }
        policy.recordAccesses(java.util.List.of(k(1), k(2), k(3)));
        assertThat(policy.nextVictim(key -> true)).isEqualTo(k(4));
        assertThat(policy.nextVictim(key -> !key.equals(k(4)) && !key.equals(k(5))))
                .isEqualTo(k(1));
    }

    @Test
    void prefixAwareEvictsABlockThatNamesItselfAsParent() {
        PrefixAwarePolicy policy = new PrefixAwarePolicy();
        policy.onInsert(k(1), k(1));
        assertThat(policy.nextVictim(key -> true)).isEqualTo(k(1));
        policy.onRemove(k(1));
        assertThat(policy.size()).isZero();
    }

    @Test
    void prefixAwareEvictsFromAParentCycleWhenNoLeafIsLeft() {
        PrefixAwarePolicy policy = new PrefixAwarePolicy();
        // 1 -> 2 -> 3 -> 1: no block is a leaf
        policy.onInsert(k(1), k(3));
        policy.onInsert(k(2), k(1));
        policy.onInsert(k(3), k(2));
        policy.onInsert(k(4), null);
        policy.onInsert(k(5), k(4));
        // the leaf 5 goes first, then the oldest on the cycle, never 4 while its child 5 is held
        assertThat(policy.nextVictim(key -> true)).isEqualTo(k(5));
        assertThat(policy.nextVictim(key -> !key.equals(k(5)))).isEqualTo(k(1));
        assertThat(policy.nextVictim(key -> !key.equals(k(5)) && !key.equals(k(1))))
                .isEqualTo(k(2));
        // with 1 gone the cycle is a chain again: 3 lost its child and is an ordinary leaf
        policy.onRemove(k(1));
        assertThat(policy.nextVictim(key -> !key.equals(k(5)))).isEqualTo(k(3));
    }

    @ParameterizedTest
    @EnumSource(EvictionPolicyKind.class)
    void aSearchThatStopsOffersNoVictimAndLeavesTheOrderAsItWas(EvictionPolicyKind kind) {
        TierPolicy policy = new TierPolicy(kind, 1 << 30, key -> null, key -> 1, key -> false);
        for (int i = 1; i <= 5; i++) {
            policy.onInsert(k(i), null);
        }

        BlockKey coldest = policy.nextVictim(key -> true);

        assertThat(policy.nextVictim(key -> !key.equals(coldest), key -> key.equals(coldest)))
                .as("stopped at the coldest block, before any other was asked")
                .isNull();
        assertThat(policy.nextVictim(key -> key.equals(coldest), key -> true)).isEqualTo(coldest);
        assertThat(policy.nextVictim(key -> true)).isEqualTo(coldest);
        assertThat(policy.size()).isEqualTo(5);
    }

    @Test
    void aLookForABlockOffersNoVictimSoLfuDoesNotAgeWhenTheBlockFoundIsDeleted() {
        TierPolicy policy = new TierPolicy(EvictionPolicyKind.LFU, 1 << 30, key -> null, key -> 1, key -> false);
        for (int i = 1; i <= 3; i++) {
            policy.onInsert(k(i), null);
        }
        policy.recordAccess(k(2));
        policy.recordAccess(k(2)); // priority 3
        policy.recordAccess(k(3)); // priority 2

        assertThat(policy.anyInOrder(key -> key.equals(k(2)))).isTrue();
        assertThat(policy.anyInOrder(key -> key.equals(k(9)))).isFalse();
        policy.onRemove(k(2)); // deleted, never offered as a victim: L stays 0
        policy.onInsert(k(4), null);

        assertThat(policy.nextVictim(key -> key.equals(k(3)) || key.equals(k(4))))
                .as("a new block (priority 1) goes before one read once (priority 2)")
                .isEqualTo(k(4));
    }

    @Test
    void lfuDoesNotAgeWhenABlockASearchStoppedAtIsDeleted() {
        LfuPolicy lfu = new LfuPolicy();
        lfu.onInsert(k(1), null);
        lfu.onInsert(k(2), null);
        lfu.onAccess(k(2));
        lfu.onAccess(k(2)); // priority 3

        assertThat(lfu.nextVictim(key -> false, key -> false, key -> key.equals(k(2))))
                .isNull();
        lfu.onRemove(k(2)); // deleted, never offered as a victim
        lfu.onInsert(k(3), null);

        assertThat(lfu.priorityOf(k(3)))
                .as("L stays 0: a new block starts at 1")
                .isEqualTo(1);
    }

    /** 10,000 pinned blocks at the cold end, then a stream of stores into the full tier, one eviction each. */
    @ParameterizedTest
    @EnumSource(EvictionPolicyKind.class)
    void evictionsDoNotWalkPastTheSamePinnedBlocksAgain(EvictionPolicyKind kind) {
        Set<BlockKey> pinned = new HashSet<>();
        TierPolicy policy = new TierPolicy(kind, 1 << 30, key -> null, key -> 1, pinned::contains);
        int pins = 10_000;
        for (int i = 0; i < pins; i++) {
            policy.onInsert(k(i), null);
            pinned.add(k(i));
        }
        int next = pins;
        for (int i = 0; i < 100; i++) {
            policy.onInsert(k(next++), null);
        }
        long[] examined = {0};
        int evictions = 1_000;
        for (int round = 0; round < evictions; round++) {
            BlockKey victim = policy.nextVictim(key -> {
                examined[0]++;
                return !pinned.contains(key);
            });
            assertThat(victim).isNotNull().isNotIn(pinned);
            policy.onRemove(victim);
            policy.onInsert(k(next++), null);
        }
        // one walk past the pinned blocks, then a few keys per eviction, not 10,000 each time
        assertThat(examined[0]).isLessThanOrEqualTo(pins + 4L * evictions);
        assertThat(policy.size()).isEqualTo(pins + 100);
    }

    @ParameterizedTest
    @EnumSource(EvictionPolicyKind.class)
    void aPinnedBlockPassedOverIsEvictedAgainOnceItsPinEnds(EvictionPolicyKind kind) {
        Set<BlockKey> pinned = new HashSet<>(Set.of(k(1), k(2)));
        TierPolicy policy = new TierPolicy(kind, 1 << 20, key -> null, key -> 1, pinned::contains);
        for (int i = 1; i <= 6; i++) {
            policy.onInsert(k(i), null);
        }
        BlockKey first = policy.nextVictim(key -> !pinned.contains(key));
        assertThat(first).isNotIn(pinned);
        policy.onRemove(first);
        pinned.remove(k(1));
        policy.holdsEnded(List.of(k(1), k(2)));
        Set<BlockKey> evicted = new HashSet<>();
        BlockKey victim;
        while ((victim = policy.nextVictim(key -> !pinned.contains(key))) != null) {
            evicted.add(victim);
            policy.onRemove(victim);
        }
        assertThat(evicted).contains(k(1)).doesNotContain(k(2));
        assertThat(policy.size()).isEqualTo(1);
        pinned.remove(k(2));
        policy.holdsEnded(List.of(k(2)));
        assertThat(policy.nextVictim(key -> !pinned.contains(key))).isEqualTo(k(2));
    }

    /** Set aside while pinned, a block keeps its place: its last access (LRU, prefix-aware) or count (LFU). */
    @ParameterizedTest
    @EnumSource(names = {"LRU", "LFU", "PREFIX_AWARE"})
    void aBlockWhosePinEndedRejoinsTheOrderWhereItsAccessesPutIt(EvictionPolicyKind kind) {
        for (boolean readWhilePinned : new boolean[] {false, true}) {
            Set<BlockKey> pinned = new HashSet<>(Set.of(k(1)));
            TierPolicy policy = new TierPolicy(kind, 1 << 20, key -> null, key -> 1, pinned::contains);
            for (int i = 1; i <= 4; i++) {
                policy.onInsert(k(i), null);
            }
            assertThat(policy.nextVictim(key -> !pinned.contains(key))).isEqualTo(k(2));
            policy.onRemove(k(2));
            if (readWhilePinned) {
                policy.recordAccess(k(1));
            }
            pinned.clear();
            policy.holdsEnded(List.of(k(1)));
            List<BlockKey> order = new java.util.ArrayList<>();
            BlockKey victim;
            while ((victim = policy.nextVictim(key -> true)) != null) {
                order.add(victim);
                policy.onRemove(victim);
            }
            assertThat(order)
                    .as("read while pinned: %s", readWhilePinned)
                    .containsExactlyElementsOf(readWhilePinned ? List.of(k(3), k(4), k(1)) : List.of(k(1), k(3), k(4)));
        }
    }
}
