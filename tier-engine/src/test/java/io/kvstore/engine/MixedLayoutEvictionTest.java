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
 * its own slot size, whose slot it can use at once, but must not walk the whole tier looking for one.
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
     * A block of the store's own length, colder than half the tier but behind more than 8 blocks of another
     * length whose slab-mates are hot: evicting it frees a slot the store can use, evicting those cold small
     * blocks frees only half-slabs. A few evictions make room (each retry looks twice as far), not a third of
     * the tier's blocks (31 of 78 while every retry looked past 8 only).
     */
    @ParameterizedTest
    @EnumSource(
            value = EvictionPolicyKind.class,
            names = {"LRU", "LFU"})
    void aStoreEvictsOneBlockOfItsOwnLengthRatherThanManyColderHalfSlabs(EvictionPolicyKind kind) throws Exception {
        int smalls = 78; // 39 slabs, then one slab holding a large block: 40 slabs, full
        try (Arena arena = Arena.ofShared();
                TierEngine engine = engine(kind, 40L * LARGE)) {
            MemorySegment small = TestBlocks.bytes(arena, 0, SMALL);
            MemorySegment out = arena.allocate(SMALL);
            for (int i = 0; i < smalls; i++) {
                engine.put(TestBlocks.key("a", i), null, small);
            }
            BlockKey large = TestBlocks.key("b", 0);
            engine.put(large, null, TestBlocks.bytes(arena, 1, LARGE));
            for (int i = 1; i < smalls; i += 2) { // each slab's second block is read: its first stays cold
                engine.get(TestBlocks.key("a", i), out);
            }

            engine.put(TestBlocks.key("b", 1), null, TestBlocks.bytes(arena, 2, LARGE));

            assertThat(engine.info(large))
                    .as("the large block, whose slot fits")
                    .isNull();
            long smallLeft = java.util.stream.IntStream.range(0, smalls)
                    .filter(i -> engine.info(TestBlocks.key("a", i)) != null)
                    .count();
            assertThat(smallLeft).as("small blocks left of %d", smalls).isGreaterThanOrEqualTo(smalls - 3);
        }
    }

    /**
     * LFU ages the tier (raises L to the priority of what goes) only when a block offered as a victim leaves it:
     * the block a store's look for a victim of its own length gave up at was never offered, so deleting it
     * later must leave L where it was, or every block stored after outranks blocks read far more often.
     */
    @org.junit.jupiter.api.Test
    void deletingABlockALookForAVictimOfAnotherLengthGaveUpAtDoesNotAgeLfu() throws Exception {
        try (Arena arena = Arena.ofShared();
                TierEngine engine = engine(EvictionPolicyKind.LFU, 20L * SMALL)) {
            MemorySegment small = TestBlocks.bytes(arena, 0, SMALL);
            MemorySegment out = arena.allocate(SMALL);
            for (int i = 0; i < 20; i++) {
                engine.put(TestBlocks.key("a", i), null, small);
            }
            for (int i = 8; i < 20; i++) { // read twice: 3 hits each, behind the 8 coldest (1 hit)
                engine.get(TestBlocks.key("a", i), out);
                engine.get(TestBlocks.key("a", i), out);
            }
            // full: the large store looks past a0..a7 and gives up at a8 (the 9th), then takes the coldest
            engine.put(TestBlocks.key("b", 0), null, TestBlocks.bytes(arena, 1, LARGE));
            for (int i = 2; i <= 8; i++) {
                engine.delete(TestBlocks.key("a", i)); // a8: deleted, not evicted
            }
            BlockKey readOnce = TestBlocks.key("c", 0);
            engine.put(readOnce, null, small);
            for (int i = 1; i <= 6; i++) { // full again
                engine.put(TestBlocks.key("d", i), null, small);
            }

            engine.put(TestBlocks.key("e", 0), null, small);

            assertThat(engine.info(readOnce))
                    .as("the block stored once after the deletes goes before blocks read three times")
                    .isNull();
            assertThat(engine.info(TestBlocks.key("a", 9))).isNotNull();
        }
    }

    /**
     * Slots are whole multiples of 4 KiB: a block a little shorter than the store's takes a slot of the same size,
     * so it is the victim that makes room at once, as one of the very same length is.
     */
    @ParameterizedTest
    @EnumSource(EvictionPolicyKind.class)
    void aStoreIntoAFullTierTakesANearbyVictimOfItsSlotSizeThoughNotOfItsLength(EvictionPolicyKind kind)
            throws Exception {
        try (Arena arena = Arena.ofShared();
                TierEngine engine = engine(kind, 4L * SMALL)) {
            MemorySegment small = TestBlocks.bytes(arena, 1, SMALL);
            engine.put(TestBlocks.key("a", 1), null, small);
            engine.put(TestBlocks.key("a", 2), null, small);
            BlockKey shorter = TestBlocks.key("b", 1);
            engine.put(shorter, null, TestBlocks.bytes(arena, 2, LARGE - 100));

            BlockKey next = TestBlocks.key("b", 2);
            engine.put(next, null, TestBlocks.bytes(arena, 3, LARGE));

            assertThat(engine.info(shorter))
                    .as("the one block whose slot fits went")
                    .isNull();
            assertThat(engine.info(TestBlocks.key("a", 1)))
                    .as("older, but of another slot size")
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
