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
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Random operation sequences against a reference model. Each run prints its seed; rerun one with
 * {@code -Dkvstore.seed=<seed>}. The model knows every block ever stored (its bytes follow from its
 * id), every deletion, and every pin and lease; it cannot know which unpinned blocks a policy chose to
 * drop, so residency is read back through {@code get}, a path independent of the catalog's lookup.
 * Promotion on hit stays off here: a read would then move blocks while the model reads the chain
 * (promotion has its own test in {@link TierEngineTest}).
 */
class TierEnginePropertyTest {

    private static final int SMALL = 4096;
    private static final int LARGE = 12 * 1024;

    static List<Long> seeds() {
        String fixed = System.getProperty("kvstore.seed");
        if (fixed != null) {
            return List.of(Long.parseLong(fixed));
        }
        long base = System.nanoTime();
        List<Long> seeds = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            seeds.add(base + i * 0x9E3779B97F4A7C15L);
        }
        return seeds;
    }

    /** A chain of block ids in one namespace; each block's parent is the previous one. */
    private record Chain(String namespace, List<Long> ids, int blockSize) {}

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void engineAgreesWithReferenceModel(long seed) throws Exception {
        System.out.println("TierEnginePropertyTest seed " + seed + " (rerun with -Dkvstore.seed=" + seed + ")");
        SplittableRandom random = new SplittableRandom(seed);
        EvictionPolicyKind[] kinds = EvictionPolicyKind.values();
        Map<TierId, TierSettings> settings = Map.of(
                TierId.HBM, new TierSettings(kinds[random.nextInt(kinds.length)], 0.9, 0.6, false),
                TierId.DRAM, new TierSettings(kinds[random.nextInt(kinds.length)], 0.9, 0.6, false));
        long hbmCapacity = 64 * 1024;
        long dramCapacity = 256 * 1024;
        List<MemoryTier> tiers = List.of(
                new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), hbmCapacity, 32 * 1024),
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), dramCapacity, 32 * 1024));
        try (Arena arena = Arena.ofShared();
                TierEngine engine =
                        new TierEngine(tiers, settings, Duration.ofMinutes(5), EngineEvents.NONE, Clock.systemUTC())) {
            List<Chain> chains = new ArrayList<>();
            Map<BlockKey, Long> stored = new HashMap<>();
            Map<BlockKey, Integer> sizes = new HashMap<>();
            Set<BlockKey> deleted = new HashSet<>();
            Map<BlockKey, Integer> pins = new HashMap<>();
            List<Lease> leases = new ArrayList<>();
            long nextId = 1;

            for (int op = 0; op < 400; op++) {
                int choice = random.nextInt(100);
                if (choice < 40 || chains.isEmpty()) {
                    // extend an existing chain or start a new one
                    Chain chain;
                    if (chains.isEmpty() || random.nextInt(4) == 0) {
                        chain = new Chain(
                                "ns" + random.nextInt(2), new ArrayList<>(), random.nextBoolean() ? SMALL : LARGE);
                        chains.add(chain);
                    } else {
                        chain = chains.get(random.nextInt(chains.size()));
                    }
                    long id = nextId++;
                    BlockHash parent = chain.ids.isEmpty() ? null : BlockHash.ofLong(chain.ids.getLast());
                    BlockKey key = new BlockKey(chain.namespace, BlockHash.ofLong(id));
                    chain.ids.add(id);
                    try {
                        engine.put(key, parent, TestBlocks.bytes(arena, id, chain.blockSize));
                        stored.put(key, id);
                        sizes.put(key, chain.blockSize);
                    } catch (TierFullException full) {
                        // allowed only when pins and leases hold the memory; checked below by capacity
                    }
                } else if (choice < 55) {
                    Chain chain = chains.get(random.nextInt(chains.size()));
                    checkLookupAgainstReads(engine, chain, stored, sizes, deleted, arena);
                } else if (choice < 65) {
                    BlockKey key = randomStored(stored, random);
                    if (key != null && pins.getOrDefault(key, 0) == 0 && !leased(leases, key)) {
                        engine.delete(key);
                        stored.remove(key);
                        deleted.add(key);
                    }
                } else if (choice < 73) {
                    BlockKey key = randomStored(stored, random);
                    if (key != null && engine.pin(List.of(key)) == 1) {
                        pins.merge(key, 1, Integer::sum);
                    }
                } else if (choice < 80) {
                    BlockKey key = randomPinned(pins, random);
                    if (key != null) {
                        engine.unpin(List.of(key));
                        pins.computeIfPresent(key, (k, n) -> n > 1 ? n - 1 : null);
                    }
                } else if (choice < 86) {
                    Chain chain = chains.get(random.nextInt(chains.size()));
                    List<BlockKey> keys = chain.ids.stream()
                            .map(i -> new BlockKey(chain.namespace, BlockHash.ofLong(i)))
                            .toList();
                    leases.add(engine.lease(keys, null));
                } else if (choice < 92) {
                    if (!leases.isEmpty()) {
                        assertThat(engine.release(leases.remove(random.nextInt(leases.size()))
                                        .id()))
                                .isTrue();
                    }
                } else if (choice < 96) {
                    TierId tier = random.nextBoolean() ? TierId.HBM : TierId.DRAM;
                    engine.setPolicy(tier, kinds[random.nextInt(kinds.length)]);
                } else {
                    TierId tier = random.nextBoolean() ? TierId.HBM : TierId.DRAM;
                    engine.evict(tier, 0, 1 + random.nextInt(4));
                }
                engine.awaitMoves();

                // capacity is never exceeded
                for (TierStats s : engine.stats()) {
                    assertThat(s.usedBytes())
                            .as("used bytes of %s, seed %d", s.tier(), seed)
                            .isLessThanOrEqualTo(s.capacityBytes());
                }
                // pinned and leased blocks are never evicted
                for (BlockKey key : pins.keySet()) {
                    assertThat(engine.info(key))
                            .as("pinned %s, seed %d", key, seed)
                            .isNotNull();
                    assertThat(engine.info(key).resident()).isTrue();
                }
                for (Lease lease : leases) {
                    for (BlockKey key : lease.blocks()) {
                        assertThat(engine.info(key).resident())
                                .as("leased %s, seed %d", key, seed)
                                .isTrue();
                    }
                }
            }
            // at the end every chain's lookup equals what reads say, and deleted blocks are gone
            for (Chain chain : chains) {
                checkLookupAgainstReads(engine, chain, stored, sizes, deleted, arena);
            }
            for (BlockKey key : deleted) {
                if (!stored.containsKey(key)) {
                    assertThat(engine.info(key))
                            .as("deleted %s, seed %d", key, seed)
                            .isNull();
                }
            }
        }
    }

    /** lookup(chain) must equal the number of leading blocks that read back with exactly their bytes. */
    private static void checkLookupAgainstReads(
            TierEngine engine,
            Chain chain,
            Map<BlockKey, Long> stored,
            Map<BlockKey, Integer> sizes,
            Set<BlockKey> deleted,
            Arena arena)
            throws Exception {
        List<BlockHash> hashes = chain.ids.stream().map(BlockHash::ofLong).toList();
        int expected = 0;
        for (long id : chain.ids) {
            BlockKey key = new BlockKey(chain.namespace, BlockHash.ofLong(id));
            if (!stored.containsKey(key)) {
                break;
            }
            MemorySegment dst = arena.allocate(sizes.get(key));
            try {
                engine.get(key, dst);
            } catch (BlockNotFoundException gone) {
                break;
            }
            assertThat(dst.mismatch(TestBlocks.bytes(arena, id, sizes.get(key))))
                    .as("bytes of %s", key)
                    .isEqualTo(-1);
            expected++;
        }
        engine.awaitMoves();
        assertThat(engine.lookup(chain.namespace, hashes).matchedBlocks())
                .as("lookup of %s", chain)
                .isEqualTo(expected);
    }

    private static BlockKey randomStored(Map<BlockKey, Long> stored, SplittableRandom random) {
        if (stored.isEmpty()) {
            return null;
        }
        List<BlockKey> keys = new ArrayList<>(stored.keySet());
        keys.sort(java.util.Comparator.comparing(BlockKey::toString));
        return keys.get(random.nextInt(keys.size()));
    }

    private static BlockKey randomPinned(Map<BlockKey, Integer> pins, SplittableRandom random) {
        if (pins.isEmpty()) {
            return null;
        }
        List<BlockKey> keys = new ArrayList<>(pins.keySet());
        keys.sort(java.util.Comparator.comparing(BlockKey::toString));
        return keys.get(random.nextInt(keys.size()));
    }

    private static boolean leased(List<Lease> leases, BlockKey key) {
        return leases.stream().anyMatch(l -> l.blocks().contains(key));
    }
}
