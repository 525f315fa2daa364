package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.memory.EmulatedDeviceMemoryProvider;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.io.IOException;
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

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A tier whose delete of one key stops until the test opens the gate. */
    private static final class DeleteGate implements BlockTier {
        private final MemoryTier tier;
        private final BlockKey gated;
        final CountDownLatch reached = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);

        DeleteGate(MemoryTier tier, BlockKey gated) {
            this.tier = tier;
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

        @Override
        public TierId id() {
            return tier.id();
        }

        @Override
        public String provider() {
            return tier.provider();
        }

        @Override
        public long capacityBytes() {
            return tier.capacityBytes();
        }

        @Override
        public long usedBytes() {
            return tier.usedBytes();
        }

        @Override
        public int blockCount() {
            return tier.blockCount();
        }

        @Override
        public void write(BlockRecord record, MemorySegment src) throws IOException {
            tier.write(record, src);
        }

        @Override
        public BlockRecord read(BlockKey key, MemorySegment dst) throws IOException {
            return tier.read(key, dst);
        }

        @Override
        public @Nullable MemorySegment verifiedView(BlockKey key) throws IOException {
            return tier.verifiedView(key);
        }

        @Override
        public boolean contains(BlockKey key) {
            return tier.contains(key);
        }

        @Override
        public void close() {
            tier.close();
        }
    }
}
