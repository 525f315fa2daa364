package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.catalog.CatalogEntry;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A demotion that finds its victim's copy corrupt (a late one-sided write landed on it) while a client is
 * still reading that block, with the interleaving forced: the demoter claims the block, a reader starts,
 * then the demoter reads the block and drops it.
 */
class CorruptDemotionRaceTest {

    private static final int BLOCK = 64 * 1024;
    /** Each task on a thread of its own: one stuck in the engine must not hold up another (nor another test). */
    private static final java.util.concurrent.Executor OWN_THREAD =
            task -> Thread.ofPlatform().daemon().start(task);

    @TempDir
    Path dir;

    @Test
    void aBlockDroppedCorruptByADemotionWhileBeingReadCanBeStoredAgain() throws Exception {
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        List<BlockTier> tiers = List.of(dram, RaceFixtures.nvme(dir));
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(tiers, EngineEvents.NONE)) {
            BlockKey victim = TestBlocks.key("ns", 1);
            MemorySegment victimBytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(victim, null, victimBytes);
            for (long id = 2; id <= 4; id++) {
                engine.put(TestBlocks.key("ns", id), null, TestBlocks.bytes(arena, id, BLOCK));
            }
            // the demoter claims its first victim, then stops while it looks for the next one
            StoppedDemoter demoter = StoppedDemoter.start(engine, TestBlocks.key("ns", 2));

            // a client reads the victim; while it sends the bytes, a late write lands on the slot
            CountDownLatch finishRead = new CountDownLatch(1);
            CompletableFuture<Void> read = corruptingRead(engine, dram, victim, finishRead);
            demoter.goOn();
            // the demoter finds the copy corrupt and drops it
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (engine.info(victim) != null && engine.info(victim).tiers().contains(TierId.DRAM)) {
                assertThat(System.nanoTime()).isLessThan(deadline);
                Thread.sleep(1);
            }
            Thread.sleep(50);
            finishRead.countDown();
            read.get(10, TimeUnit.SECONDS);
            demoter.thread().join(10_000);

            // the client stores the block again: it must be accepted, and read back whole
            CompletableFuture<TierId> put = CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            return engine.put(victim, null, victimBytes);
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    },
                    OWN_THREAD);
            assertThat(put.get(30, TimeUnit.SECONDS)).isNotNull();
            MemorySegment out = arena.allocate(BLOCK);
            engine.get(victim, out);
            assertThat(out.mismatch(victimBytes)).isEqualTo(-1);
        }
    }

    @Test
    void aStoreIntoTheFullTierWaitsForTheSlotOfACorruptCopyDroppedWhileBeingRead() throws Exception {
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        List<BlockTier> tiers = List.of(dram, RaceFixtures.nvme(dir));
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(tiers, EngineEvents.NONE)) {
            // DRAM full, every block but the victim pinned: the victim's slot is the only one that can free
            BlockKey victim = TestBlocks.key("ns", 1);
            engine.put(victim, null, TestBlocks.bytes(arena, 1, BLOCK));
            List<BlockKey> pinned = new java.util.ArrayList<>();
            for (long id = 2; id <= 8; id++) {
                BlockKey key = TestBlocks.key("ns", id);
                engine.put(key, null, TestBlocks.bytes(arena, id, BLOCK));
                pinned.add(key);
            }
            assertThat(engine.pin(pinned)).isEqualTo(7);
            assertThat(dram.blockCount()).isEqualTo(8);
            // the demoter claims the victim, then stops while it looks for the next one
            StoppedDemoter demoter = StoppedDemoter.start(engine, TestBlocks.key("ns", 2));

            // a client reads the victim; while it sends the bytes, a late write lands on the slot
            CountDownLatch finishRead = new CountDownLatch(1);
            CompletableFuture<Void> read = corruptingRead(engine, dram, victim, finishRead);
            demoter.goOn();
            // the demoter finds the copy corrupt, drops it and ends; the slot stays taken until the reader leaves
            demoter.thread().join(10_000);
            assertThat(demoter.thread().isAlive()).isFalse();
            assertThat(engine.info(victim).tiers()).isEmpty();
            assertThat(dram.blockCount()).isEqualTo(8);

            // meanwhile a client stores a new block: DRAM is full, but a slot is on its way, so the store waits
            RaceFixtures.assertStoreWaitsForTheSlotThenLands(engine, arena, BLOCK, 9, finishRead, read);
        }
    }

    @Test
    void aCopyDroppedCorruptByAReaderDuringItsDemotionIsRemovedOnce() throws Exception {
        MemoryTier hbm = new MemoryTier(TierId.HBM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        BlockKey victim = TestBlocks.key("ns", 1);
        RaceFixtures.Recorder events = new RaceFixtures.Recorder(TierId.HBM, TierId.DRAM);
        List<String> removals = events.removed;
        List<BlockTier> tiers = List.of(hbm, dram, RaceFixtures.nvme(dir));
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(tiers, events)) {
            engine.setWriteThrough("ns", true); // the block is in HBM and on NVMe
            MemorySegment victimBytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(victim, null, victimBytes);
            CompletableFuture<Void> read = new CompletableFuture<>();
            // once the demoter has copied the block to DRAM (and before it finishes the move), a late write
            // lands on the HBM slot and a client reads the block: the read drops the HBM copy as corrupt
            events.onMove(() -> {
                MemorySegment slot = hbm.slot(hbm.offsetOf(victim), BLOCK);
                slot.set(ValueLayout.JAVA_BYTE, 100, (byte) (slot.get(ValueLayout.JAVA_BYTE, 100) ^ 1));
                Thread.ofPlatform().start(() -> {
                    try {
                        MemorySegment out = arena.allocate(BLOCK);
                        engine.get(victim, out);
                        assertThat(out.mismatch(victimBytes)).isEqualTo(-1);
                        read.complete(null);
                    } catch (Throwable e) {
                        read.completeExceptionally(e);
                    }
                });
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!removals.contains("HBM " + victim) && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
            });
            engine.demoteToLowWatermark(TierId.HBM);
            read.get(10, TimeUnit.SECONDS);

            assertThat(engine.info(victim).tiers()).containsExactlyInAnyOrder(TierId.DRAM, TierId.NVME);
            // one removal per copy added, as EngineEvents#copyRemoved promises
            assertThat(removals).containsExactly("HBM " + victim);
        }
    }

    @Test
    void aReaderDroppingTheOnlyCopyAsCorruptWhileItIsDemotedKeepsTheGoodCopyBelow() throws Exception {
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        BlockKey victim = TestBlocks.key("ns", 1);
        RaceFixtures.Recorder events = new RaceFixtures.Recorder(TierId.DRAM, TierId.NVME);
        List<String> removals = events.removed;
        List<BlockTier> tiers = List.of(dram, RaceFixtures.nvme(dir));
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(tiers, events)) {
            MemorySegment victimBytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(victim, null, victimBytes); // its only copy, in DRAM
            CompletableFuture<Void> read = new CompletableFuture<>();
            // once the demoter has written the good copy to NVMe (and before it records it), a late write lands
            // on the DRAM slot and a client reads the block: the read drops the DRAM copy as corrupt
            events.onMove(() -> {
                MemorySegment slot = dram.slot(dram.offsetOf(victim), BLOCK);
                slot.set(ValueLayout.JAVA_BYTE, 100, (byte) (slot.get(ValueLayout.JAVA_BYTE, 100) ^ 1));
                Thread.ofPlatform().daemon().start(() -> {
                    try {
                        engine.get(victim, arena.allocate(BLOCK));
                    } catch (Throwable notServed) {
                        // this read may find no good copy recorded yet; what matters is what stays cached
                    }
                    read.complete(null);
                });
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!removals.contains("DRAM " + victim) && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
            });
            engine.demoteToLowWatermark(TierId.DRAM);
            read.get(10, TimeUnit.SECONDS);

            // the good copy the demoter wrote stays, and serves the block
            assertThat(engine.info(victim)).isNotNull();
            assertThat(engine.info(victim).tiers()).containsExactly(TierId.NVME);
            MemorySegment out = arena.allocate(BLOCK);
            engine.get(victim, out);
            assertThat(out.mismatch(victimBytes)).isEqualTo(-1);
            assertThat(removals).containsExactly("DRAM " + victim);
        }
    }

    /** A demoter that claimed its first victim and stopped on the monitor of the next block it looks at. */
    private record StoppedDemoter(Thread thread, Thread holder, CountDownLatch release) {

        static StoppedDemoter start(TierEngine engine, BlockKey nextKey) throws Exception {
            CatalogEntry next = RaceFixtures.catalogOf(engine).get(nextKey);
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Thread holder = Thread.ofPlatform().start(() -> {
                synchronized (next) {
                    held.countDown();
                    try {
                        release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
            Thread demoter = Thread.ofPlatform().start(() -> engine.demoteToLowWatermark(TierId.DRAM));
            RaceFixtures.awaitStopped(demoter, Set.of(Thread.State.BLOCKED));
            return new StoppedDemoter(demoter, holder, release);
        }

        /** Lets the demoter go on to read (and find corrupt) the victim it claimed. */
        void goOn() throws InterruptedException {
            release.countDown();
            holder.join();
        }
    }

    /**
     * A client reading {@code victim} from {@code dram}: while it sends the bytes, a late write lands on the slot;
     * it reads on until {@code finish}. Returns once the read is under way.
     */
    private static CompletableFuture<Void> corruptingRead(
            TierEngine engine, MemoryTier dram, BlockKey victim, CountDownLatch finish) throws InterruptedException {
        CountDownLatch reading = new CountDownLatch(1);
        CompletableFuture<Void> read = CompletableFuture.runAsync(
                () -> {
                    try {
                        engine.read(victim, (tier, record, bytes) -> {
                            MemorySegment slot = dram.slot(dram.offsetOf(victim), BLOCK);
                            slot.set(ValueLayout.JAVA_BYTE, 100, (byte) (slot.get(ValueLayout.JAVA_BYTE, 100) ^ 1));
                            reading.countDown();
                            try {
                                finish.await(30, TimeUnit.SECONDS);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            return null;
                        });
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                },
                OWN_THREAD);
        assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();
        return read;
    }
}
