package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.memory.EmulatedDeviceMemoryProvider;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A store into a full tier whose only movable block is being demoted in the background waits for that
 * demotion to free the slot, through the whole move: including the moment after the block left the tier's
 * residency and before its slot is free, when it no longer looks held by anyone. (The window a CI run's
 * DashboardQueriesTest hit: a 48-block PUT into a small DRAM tier under demotion was refused with 507.)
 */
class RoomWaitTest {

    private static final int BLOCK = 16 * 1024;

    @Test
    void storeWaitsForADemotionThatIsFreeingTheOnlySlot() throws Exception {
        BlockKey demoted = TestBlocks.key("m", 3);
        var hbm = new DeleteGate(
                new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 3L * BLOCK, BLOCK), demoted);
        var dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 16L * BLOCK, BLOCK);
        // three blocks pass HBM's high watermark; the mover demotes down to two
        var settings = Map.of(
                TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 0.9, 0.67, false),
                TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false));
        try (Arena arena = Arena.ofConfined();
                TierEngine engine = new TierEngine(
                        List.of(hbm, dram), settings, Duration.ofMinutes(1), EngineEvents.NONE, Clock.systemUTC())) {
            BlockKey a = TestBlocks.key("m", 1);
            BlockKey b = TestBlocks.key("m", 2);
            engine.put(a, null, TestBlocks.bytes(arena, 1, BLOCK));
            engine.put(b, a.hash(), TestBlocks.bytes(arena, 2, BLOCK));
            assertThat(engine.pin(List.of(a, b))).isEqualTo(2);
            engine.put(demoted, b.hash(), TestBlocks.bytes(arena, 3, BLOCK));
            assertThat(hbm.reached.await(10, TimeUnit.SECONDS))
                    .as("the mover demotes block 3 and frees its HBM slot")
                    .isTrue();
            // block 3 is in DRAM now and no longer in HBM, but its HBM slot is not free until the gate opens
            Thread opener = Thread.ofPlatform().start(() -> {
                sleep(300);
                hbm.open.countDown();
            });
            BlockKey d = TestBlocks.key("m", 4);
            assertThat(engine.put(d, demoted.hash(), TestBlocks.bytes(arena, 4, BLOCK)))
                    .isEqualTo(TierId.HBM);
            opener.join();
            engine.awaitMoves();
            assertThat(engine.info(demoted).fastestTier()).isEqualTo(TierId.DRAM);
            MemorySegment back = arena.allocate(BLOCK);
            engine.get(d, back);
            assertThat(back.mismatch(TestBlocks.bytes(arena, 4, BLOCK))).isEqualTo(-1);
        }
    }

    /**
     * A store into a full LFU tier waits while a block there is read (here from its copy in the tier above): its
     * look for such a block must not offer that block as a victim, since it is not evicted. Otherwise the block,
     * deleted later, ages the tier (L rises to its priority) as an eviction would, and a block stored once after
     * that outranks blocks read before it.
     */
    @Test
    void aStoreWaitingForAReadBlockDoesNotAgeLfuWhenThatBlockIsDeletedLater() throws Exception {
        var hbm = new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 4L * BLOCK, BLOCK);
        var dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 4L * BLOCK, BLOCK);
        var settings = Map.of(
                TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false),
                TierId.DRAM, new TierSettings(EvictionPolicyKind.LFU, 1.0, 0.5, false));
        try (Arena arena = Arena.ofShared();
                TierEngine engine = new TierEngine(
                        List.of(hbm, dram), settings, Duration.ofMinutes(1), EngineEvents.NONE, Clock.systemUTC())) {
            MemorySegment out = arena.allocate(BLOCK);
            BlockKey cold = TestBlocks.key("m", 1);
            BlockKey readOnce1 = TestBlocks.key("m", 2);
            BlockKey readOnce2 = TestBlocks.key("m", 3);
            BlockKey read = TestBlocks.key("w", 4);
            engine.put(cold, null, TestBlocks.bytes(arena, 1, BLOCK), TierId.DRAM);
            engine.put(readOnce1, null, TestBlocks.bytes(arena, 2, BLOCK), TierId.DRAM);
            engine.put(readOnce2, null, TestBlocks.bytes(arena, 3, BLOCK), TierId.DRAM);
            engine.setWriteThrough("w", true);
            engine.put(read, null, TestBlocks.bytes(arena, 4, BLOCK)); // into HBM, and through into DRAM
            engine.get(readOnce1, out);
            engine.get(readOnce2, out);
            // DRAM (LFU) is full: cold 1 hit, readOnce1 and readOnce2 2 hits, read 1 hit but newer than cold
            List<BlockKey> others = List.of(cold, readOnce1, readOnce2);
            assertThat(engine.pin(others)).isEqualTo(3);

            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch finishRead = new CountDownLatch(1);
            Thread reader = Thread.ofPlatform().daemon().start(() -> {
                try {
                    engine.read(read, (tier, record, view) -> {
                        reading.countDown();
                        awaitQuietly(finishRead); // a client that stopped reading
                        return tier;
                    });
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            try {
                assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();
                var refused = new java.util.concurrent.atomic.AtomicReference<@Nullable Throwable>();
                Thread store = Thread.ofPlatform().daemon().start(() -> {
                    try {
                        engine.put(TestBlocks.key("m", 5), null, TestBlocks.bytes(arena, 5, BLOCK), TierId.DRAM);
                    } catch (Throwable e) {
                        refused.set(e);
                    }
                });
                // the store waits for the read block: nothing else in DRAM can go
                RaceFixtures.awaitStopped(store, java.util.Set.of(Thread.State.TIMED_WAITING));
                assertThat(engine.pin(List.of(read))).isEqualTo(1); // now nothing is held briefly: refused
                store.join(TimeUnit.SECONDS.toMillis(10));
                assertThat(refused.get()).isInstanceOf(io.kvstore.tier.TierFullException.class);
            } finally {
                finishRead.countDown();
                reader.join(TimeUnit.SECONDS.toMillis(10));
            }
            engine.unpin(List.of(cold, readOnce1, readOnce2, read));
            assertThat(engine.delete(read)).isTrue(); // deleted, never evicted: L stays 0

            BlockKey storedOnce = TestBlocks.key("m", 6);
            engine.put(storedOnce, null, TestBlocks.bytes(arena, 6, BLOCK), TierId.DRAM); // full again
            engine.put(TestBlocks.key("m", 7), null, TestBlocks.bytes(arena, 7, BLOCK), TierId.DRAM); // cold goes
            engine.put(TestBlocks.key("m", 8), null, TestBlocks.bytes(arena, 8, BLOCK), TierId.DRAM);

            assertThat(engine.info(cold)).isNull();
            assertThat(engine.info(storedOnce))
                    .as("the block stored once after the delete goes before blocks read once")
                    .isNull();
            assertThat(engine.info(readOnce1)).isNotNull();
            assertThat(engine.info(readOnce2)).isNotNull();
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A tier whose delete of one key stops until the test opens the gate. */
    private static final class DeleteGate extends ForwardingTier {
        private final BlockKey gated;
        final CountDownLatch reached = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);

        DeleteGate(MemoryTier tier, BlockKey gated) {
            super(tier);
            this.gated = gated;
        }

        @Override
        public boolean delete(BlockKey key) {
            if (key.equals(gated)) {
                reached.countDown();
                try {
                    open.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return tier.delete(key);
        }
    }
}
