package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An operator switches a full tier's eviction policy at run time ({@code TierStack.setPolicy}): the evictions
 * that follow obey the new policy, the new policy tracks exactly the blocks the tier holds (so evicting all of
 * them empties the tier), and stores racing the switch lose nothing.
 */
class EvictionPolicySwitchTest {

    private static final int BLOCK = 16 * 1024;

    private final Arena arena = Arena.ofShared();
    private @Nullable TierEngine engine;

    /** A DRAM tier of {@code blocks} blocks under {@code policy}, no tier below: evicted blocks are gone. */
    private TierEngine dram(int blocks, EvictionPolicyKind policy) {
        engine = new TierEngine(
                List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), (long) blocks * BLOCK, BLOCK)),
                Map.of(TierId.DRAM, new TierSettings(policy, 1.0, 0.5, false)),
                Duration.ofSeconds(30),
                EngineEvents.NONE,
                Clock.systemUTC());
        return engine;
    }

    @AfterEach
    void close() {
        if (engine != null) {
            engine.close();
        }
        arena.close();
    }

    @Test
    void afterLruToLfuTheLeastUsedBlockGoesNotTheLeastRecent() throws Exception {
        TierEngine e = dram(8, EvictionPolicyKind.LRU);
        List<BlockKey> keys = new ArrayList<>();
        for (long id = 1; id <= 8; id++) {
            keys.add(store(e, id, null));
        }
        e.setPolicy(TierId.DRAM, EvictionPolicyKind.LFU);
        BlockKey popular = keys.getFirst();
        for (int i = 0; i < 5; i++) {
            e.lookup("m", List.of(popular.hash()));
        }
        for (BlockKey key : keys.subList(1, 8)) {
            e.lookup("m", List.of(key.hash())); // each read once, after the popular one: LRU would evict it first
        }

        assertThat(e.evict(TierId.DRAM, 0, 7).blocks()).isEqualTo(7);

        assertThat(e.settings(TierId.DRAM).policy()).isEqualTo(EvictionPolicyKind.LFU);
        assertThat(resident(e, keys)).as("left after evicting 7 of 8").containsExactly(popular);
    }

    @Test
    void afterLruToPrefixAwareAChainLosesItsTailNotItsRoot() throws Exception {
        TierEngine e = dram(8, EvictionPolicyKind.LRU);
        List<BlockKey> chain = chain(e, 1, 8);
        e.lookup("m", hashes(chain)); // reads the root first: under LRU it would go first, and the whole chain with it
        e.setPolicy(TierId.DRAM, EvictionPolicyKind.PREFIX_AWARE);

        e.evict(TierId.DRAM, 0, 3);

        assertThat(e.lookup("m", hashes(chain)).matchedBlocks())
                .as("prefix still matched")
                .isEqualTo(5);
        assertThat(resident(e, chain)).containsExactlyElementsOf(chain.subList(0, 5));
    }

    /**
     * A block a victim search passed while it was pinned is set aside by the old policy; the new one must still
     * know it, so it is evicted once unpinned, and nothing else is tracked.
     */
    @Test
    void everyBlockTheTierHoldsIsKnownToEachPolicyItIsSwitchedTo() throws Exception {
        for (EvictionPolicyKind from : EvictionPolicyKind.values()) {
            for (EvictionPolicyKind to : EvictionPolicyKind.values()) {
                if (from == to) {
                    continue;
                }
                TierEngine e = dram(8, from);
                BlockKey pinned = store(e, 100, null); // the coldest block: every search passes it
                List<BlockKey> chain = chain(e, 1, 4);
                store(e, 101, null);
                store(e, 102, null);
                assertThat(e.pin(List.of(pinned))).isEqualTo(1);
                e.evict(TierId.DRAM, 0, 2); // searches pass the pinned block, and the old policy sets it aside
                int held = e.tier(TierId.DRAM).blockCount();
                String what = from + " -> " + to;

                e.setPolicy(TierId.DRAM, to);

                assertThat(e.policy(TierId.DRAM).size())
                        .as("tracked after %s", what)
                        .isEqualTo(held);
                e.unpin(List.of(pinned));
                e.evict(TierId.DRAM, 0, Integer.MAX_VALUE);
                assertThat(e.tier(TierId.DRAM).blockCount())
                        .as("left after evicting all, %s", what)
                        .isZero();
                assertThat(e.tier(TierId.DRAM).usedBytes())
                        .as("bytes left, %s", what)
                        .isZero();
                assertThat(e.policy(TierId.DRAM).size())
                        .as("still tracked, %s", what)
                        .isZero();
                assertThat(resident(e, chain)).isEmpty();
                e.close();
                engine = null;
            }
        }
    }

    /**
     * Two threads fill a tier past its capacity (each store evicting by policy) while a third switches its policy
     * round all the kinds: at the end the policy tracks exactly what the tier holds, and all of it can be evicted.
     */
    @Test
    void aSwitchRacingStoresAndEvictionsLosesNothing() throws Exception {
        TierEngine e = dram(64, EvictionPolicyKind.LRU);
        int writers = 2;
        int chainsEach = 100;
        int chainLength = 8;
        AtomicBoolean storing = new AtomicBoolean(true);
        AtomicInteger switches = new AtomicInteger();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(writers);
        for (int w = 0; w < writers; w++) {
            long first = 1_000_000L * (w + 1);
            Thread.ofPlatform().start(() -> {
                try {
                    for (int c = 0; c < chainsEach; c++) {
                        chain(e, first + (long) c * chainLength, chainLength);
                    }
                } catch (Throwable t) {
                    failures.add(t);
                } finally {
                    done.countDown();
                }
            });
        }
        Thread switcher = Thread.ofPlatform().start(() -> {
            EvictionPolicyKind[] kinds = EvictionPolicyKind.values();
            while (storing.get()) {
                e.setPolicy(TierId.DRAM, kinds[switches.getAndIncrement() % kinds.length]);
                Thread.yield();
            }
        });
        assertThat(done.await(60, TimeUnit.SECONDS)).as("stores done").isTrue();
        storing.set(false);
        switcher.join();
        e.awaitMoves();

        assertThat(failures).isEmpty();
        assertThat(switches.get()).as("switches during the stores").isGreaterThan(1);
        int held = e.tier(TierId.DRAM).blockCount();
        assertThat(held).as("the tier is full").isEqualTo(64);
        assertThat(e.policy(TierId.DRAM).size())
                .as("tracked by %s", e.settings(TierId.DRAM).policy())
                .isEqualTo(held);
        assertThat(e.evict(TierId.DRAM, 0, Integer.MAX_VALUE).blocks()).isEqualTo(held);
        assertThat(e.tier(TierId.DRAM).blockCount()).isZero();
        assertThat(e.policy(TierId.DRAM).size()).isZero();
    }

    private BlockKey store(TierEngine e, long id, @Nullable BlockHash parent) throws Exception {
        BlockKey key = TestBlocks.key("m", id);
        e.put(key, parent, TestBlocks.bytes(arena, id, BLOCK));
        return key;
    }

    private List<BlockKey> chain(TierEngine e, long first, int n) throws Exception {
        List<BlockKey> keys = new ArrayList<>();
        BlockHash parent = null;
        for (long id = first; id < first + n; id++) {
            BlockKey key = store(e, id, parent);
            keys.add(key);
            parent = key.hash();
        }
        return keys;
    }

    private static List<BlockKey> resident(TierEngine e, List<BlockKey> keys) {
        return keys.stream()
                .filter(k -> {
                    BlockInfo info = e.info(k);
                    return info != null && info.tiers().contains(TierId.DRAM);
                })
                .toList();
    }

    private static List<BlockHash> hashes(List<BlockKey> keys) {
        return keys.stream().map(BlockKey::hash).toList();
    }
}
