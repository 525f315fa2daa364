package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.EmulatedDeviceMemoryProvider;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Random stores, reads (promotion on), lookups, deletes, pins, leases and policy switches; then, with every
 * hold released, evicting everything must empty every tier: no block may fall out of its tier's policy.
 */
class EvictabilityPropertyTest {

    private static final int BLOCK = 4096;

    static List<Long> seeds() {
        String fixed = System.getProperty("kvstore.seed");
        if (fixed != null) {
            return List.of(Long.parseLong(fixed));
        }
        List<Long> seeds = new ArrayList<>();
        for (long i = 1; i <= 16; i++) {
            seeds.add(i * 0x9E3779B97F4A7C15L);
        }
        return seeds;
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void afterAnyRunEveryResidentBlockCanStillBeEvicted(long seed) throws Exception {
        SplittableRandom random = new SplittableRandom(seed);
        EvictionPolicyKind[] kinds = EvictionPolicyKind.values();
        Map<TierId, TierSettings> settings = Map.of(
                TierId.HBM, new TierSettings(kinds[random.nextInt(kinds.length)], 0.9, 0.6, true),
                TierId.DRAM, new TierSettings(kinds[random.nextInt(kinds.length)], 0.9, 0.6, random.nextBoolean()));
        List<MemoryTier> tiers = List.of(
                new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 16 * BLOCK, 16 * BLOCK),
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 48 * BLOCK, 48 * BLOCK));
        try (Arena arena = Arena.ofShared();
                TierEngine engine =
                        new TierEngine(tiers, settings, Duration.ofMinutes(5), EngineEvents.NONE, Clock.systemUTC())) {
            List<List<Long>> chains = new ArrayList<>();
            List<BlockKey> pinned = new ArrayList<>();
            List<Lease> leases = new ArrayList<>();
            long nextId = 1;
            for (int op = 0; op < 600; op++) {
                int choice = random.nextInt(100);
                if (choice < 40 || chains.isEmpty()) {
                    List<Long> chain;
                    if (chains.isEmpty() || random.nextInt(4) == 0) {
                        chain = new ArrayList<>();
                        chains.add(chain);
                    } else {
                        chain = chains.get(random.nextInt(chains.size()));
                    }
                    long id = nextId++;
                    BlockHash parent = chain.isEmpty() ? null : BlockHash.ofLong(chain.getLast());
                    chain.add(id);
                    try {
                        engine.put(TestBlocks.key("m", id), parent, TestBlocks.bytes(arena, id, BLOCK));
                    } catch (TierFullException full) {
                        // pins and leases hold the room
                    }
                } else if (choice < 55) {
                    List<Long> chain = chains.get(random.nextInt(chains.size()));
                    engine.lookup("m", chain.stream().map(BlockHash::ofLong).toList());
                } else if (choice < 70) {
                    List<Long> chain = chains.get(random.nextInt(chains.size()));
                    long id = chain.get(random.nextInt(chain.size()));
                    try {
                        engine.get(TestBlocks.key("m", id), arena.allocate(BLOCK));
                    } catch (BlockNotFoundException gone) {
                        // evicted from the last tier or deleted
                    }
                } else if (choice < 76) {
                    List<Long> chain = chains.get(random.nextInt(chains.size()));
                    try {
                        engine.delete(TestBlocks.key("m", chain.get(random.nextInt(chain.size()))));
                    } catch (BlockHeldException held) {
                        // pinned or leased
                    }
                } else if (choice < 82) {
                    List<Long> chain = chains.get(random.nextInt(chains.size()));
                    BlockKey key = TestBlocks.key("m", chain.get(random.nextInt(chain.size())));
                    if (engine.pin(List.of(key)) == 1) {
                        pinned.add(key);
                    }
                } else if (choice < 86) {
                    if (!pinned.isEmpty()) {
                        engine.unpin(List.of(pinned.remove(random.nextInt(pinned.size()))));
                    }
                } else if (choice < 90) {
                    List<Long> chain = chains.get(random.nextInt(chains.size()));
                    leases.add(engine.lease(
                            chain.stream().map(i -> TestBlocks.key("m", i)).toList(), null));
                } else if (choice < 93) {
                    if (!leases.isEmpty()) {
                        engine.release(
                                leases.remove(random.nextInt(leases.size())).id());
                    }
                } else if (choice < 97) {
                    engine.setPolicy(
                            random.nextBoolean() ? TierId.HBM : TierId.DRAM, kinds[random.nextInt(kinds.length)]);
                } else {
                    engine.evict(random.nextBoolean() ? TierId.HBM : TierId.DRAM, 0, 1 + random.nextInt(4));
                }
                engine.awaitMoves();
            }
            for (BlockKey key : pinned) {
                engine.unpin(List.of(key));
            }
            for (Lease lease : leases) {
                engine.release(lease.id());
            }
            engine.awaitMoves();
            engine.evict(TierId.HBM, 0, Integer.MAX_VALUE);
            engine.awaitMoves();
            engine.evict(TierId.DRAM, 0, Integer.MAX_VALUE);
            engine.awaitMoves();
            assertThat(engine.tier(TierId.HBM).blockCount())
                    .as("HBM blocks left, seed %d, policies %s", seed, settings)
                    .isZero();
            assertThat(engine.tier(TierId.DRAM).blockCount())
                    .as("DRAM blocks left, seed %d, policies %s", seed, settings)
                    .isZero();
        }
    }
}
