package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.eviction.TierPolicy;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Stores into a full tier that holds blocks of two lengths (two model layouts): a store prefers a victim of
 * its own length, whose slot it can use at once, but must not walk the whole tier looking for one.
 */
class MixedLayoutEvictionTest {

    private static final int SMALL = 4096;
    private static final int LARGE = 2 * SMALL;

    @ParameterizedTest
    @EnumSource(EvictionPolicyKind.class)
    void aStoreIntoATierFullOfAnotherLayoutLooksAtAFewBlocksNotTheWholeTier(EvictionPolicyKind kind) throws Exception {
        long few = blocksLookedAtPerStore(kind, 1_000);
        long many = blocksLookedAtPerStore(kind, 100_000);
        assertThat(many)
                .as(
                        "blocks looked at per store of a %d-byte block, %s tier of 100,000 %d-byte blocks vs 1,000",
                        LARGE, kind, SMALL)
                .isLessThanOrEqualTo(few)
                .isLessThan(100);
    }

    @ParameterizedTest
    @EnumSource(EvictionPolicyKind.class)
    void aStoreIntoAFullTierStillTakesANearbyVictimOfItsOwnLength(EvictionPolicyKind kind) throws Exception {
        try (Arena arena = Arena.ofShared();
                TierEngine engine = engine(kind, 4L * SMALL)) {
            MemorySegment small = TestBlocks.bytes(arena, 1, SMALL);
            engine.put(TestBlocks.key("a", 1), null, small);
            engine.put(TestBlocks.key("a", 2), null, small);
            BlockKey large = TestBlocks.key("b", 1);
            engine.put(large, null, TestBlocks.bytes(arena, 2, LARGE));

            BlockKey next = TestBlocks.key("b", 2);
            engine.put(next, null, TestBlocks.bytes(arena, 3, LARGE));

            assertThat(engine.info(large))
                    .as("the one block whose slot fits went")
                    .isNull();
            assertThat(engine.info(TestBlocks.key("a", 1)))
                    .as("older, but of another length")
                    .isNotNull();
            assertThat(engine.info(TestBlocks.key("a", 2))).isNotNull();
            assertThat(engine.info(next)).isNotNull();
        }
    }

    /**
     * A tier of {@code blocks} small blocks, full, then five stores of large blocks (the first finds no large
     * block in the tier, the later ones find the large blocks stored before them at the hot end): what each
     * store's victim searches looked at.
     */
    private static long blocksLookedAtPerStore(EvictionPolicyKind kind, int blocks) throws Exception {
        try (Arena arena = Arena.ofShared();
                TierEngine engine = engine(kind, (long) blocks * SMALL)) {
            MemorySegment small = TestBlocks.bytes(arena, 0, SMALL);
            for (int i = 0; i < blocks; i++) {
                engine.put(TestBlocks.key("a", i), null, small);
            }
            TierPolicy policy = policyOf(engine, TierId.DRAM);
            long before = policy.candidatesVisited();
            int stores = 5;
            for (int i = 0; i < stores; i++) {
                BlockKey key = TestBlocks.key("b", i);
                MemorySegment bytes = TestBlocks.bytes(arena, i, LARGE);
                assertThat(engine.put(key, null, bytes)).isEqualTo(TierId.DRAM);
                MemorySegment out = arena.allocate(LARGE);
                engine.get(key, out);
                assertThat(out.mismatch(bytes)).isEqualTo(-1);
            }
            return (policy.candidatesVisited() - before) / stores;
        }
    }

    /** One DRAM tier of {@code capacity} in 8 KiB slabs (two small slots or one large), that never demotes. */
    private static TierEngine engine(EvictionPolicyKind kind, long capacity) {
        return new TierEngine(
                List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), capacity, LARGE)),
                Map.of(TierId.DRAM, new TierSettings(kind, 1.0, 0.5, false)),
                Duration.ofMinutes(2),
                EngineEvents.NONE,
                Clock.systemUTC());
    }

    private static TierPolicy policyOf(TierEngine engine, TierId id) throws Exception {
        var field = TierEngine.class.getDeclaredField("stack");
        field.setAccessible(true);
        return ((TierStack) Objects.requireNonNull(field.get(engine))).policy(id);
    }
}
