package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
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
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The copy events ({@link EngineEvents#copyAdded}, {@link EngineEvents#copyRemoved}) tell the same story
 * as the catalog: a subscriber that keeps a ledger from them alone ends with exactly the copies the
 * catalog holds, after stores, background demotions, promotions, evictions and deletes.
 */
class EngineEventsResidencyTest {

    private static final int BLOCK = 16 * 1024;

    /** Copies per tier as the events say; a second add or a remove of an absent copy is an error. */
    private final Map<TierId, Set<BlockKey>> ledger = new EnumMap<>(TierId.class);

    private final List<String> errors = new ArrayList<>();

    private final EngineEvents events = new EngineEvents() {
        @Override
        public synchronized void copyAdded(TierId tier, BlockRecord block) {
            if (!ledger.computeIfAbsent(tier, t -> ConcurrentHashMap.newKeySet())
                    .add(block.key())) {
                errors.add("added twice: " + block.key() + " in " + tier);
            }
        }

        @Override
        public synchronized void copyRemoved(TierId tier, BlockKey key, int length) {
            Set<BlockKey> held = ledger.get(tier);
            if (held == null || !held.remove(key)) {
                errors.add("removed without add: " + key + " from " + tier);
            }
        }
    };

    @Test
    void copyEventsMatchTheCatalogAfterARandomWorkload() throws Exception {
        long seed = System.nanoTime();
        System.out.println("EngineEventsResidencyTest seed " + seed);
        Random random = new Random(seed);
        Map<TierId, TierSettings> settings = new EnumMap<>(TierId.class);
        settings.put(TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, true));
        settings.put(TierId.DRAM, new TierSettings(EvictionPolicyKind.LFU, 0.9, 0.6, false));
        List<MemoryTier> tiers = List.of(
                new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 8L * BLOCK, BLOCK),
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 24L * BLOCK, BLOCK));
        List<BlockKey> keys = new ArrayList<>();
        try (Arena arena = Arena.ofShared();
                TierEngine engine = new TierEngine(tiers, settings, Duration.ofSeconds(5), events, Clock.systemUTC())) {
            MemorySegment dst = arena.allocate(BLOCK);
            for (int step = 0; step < 2_000; step++) {
                long id = random.nextInt(64);
                BlockKey key = TestBlocks.key("ev", id);
                int op = random.nextInt(10);
                try {
                    if (op < 5) {
                        engine.put(key, null, TestBlocks.bytes(arena, id, BLOCK));
                        keys.add(key);
                    } else if (op < 8) {
                        engine.get(key, dst);
                    } else if (op < 9) {
                        engine.delete(key);
                    } else {
                        engine.evict(random.nextBoolean() ? TierId.HBM : TierId.DRAM, 0, 1 + random.nextInt(3));
                    }
                } catch (BlockNotFoundException | TierFullException expected) {
                    // a read of an absent block, or a store while everything is briefly held
                }
            }
            engine.awaitMoves();
            synchronized (events) {
                assertThat(errors).isEmpty();
                for (TierId tier : engine.tierIds()) {
                    Set<BlockKey> inCatalog = new java.util.HashSet<>();
                    for (BlockKey key : keys) {
                        var entry = engine.info(key);
                        if (entry != null && entry.residentIn(tier)) {
                            inCatalog.add(key);
                        }
                    }
                    assertThat(ledger.getOrDefault(tier, Set.of()))
                            .as("copies of tier %s by events vs catalog (seed %d)", tier, seed)
                            .isEqualTo(inCatalog);
                }
                assertThat(ledger.get(TierId.DRAM)).as("demotions reached DRAM").isNotEmpty();
            }
        }
    }
}
