package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.catalog.CatalogEntry;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A demotion of a block into NVMe and a write-through of the same block at once, with the demotion held just before
 * its NVMe write, and a delete landing while both are under way. NVMe skips a write of a key it holds, so had both
 * written, one would have written nothing; and when the delete then won, it would have removed, by key, the copy the
 * other recorded, under the readers the delete frees it after. The write-through waits for the demotion's copy
 * instead.
 */
class DemotionAndWriteThroughCopyOfOneBlockTest {

    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    @Test
    void aWriteThroughWaitsForTheDemotionOfItsBlockAndADeleteBetweenThemLeavesNoCopy() throws Exception {
        NvmeTier files = RaceFixtures.nvme(dir);
        HeldFirstWrite nvme = new HeldFirstWrite(files);
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        List<BlockTier> tiers = List.of(dram, nvme);
        BlockKey key = TestBlocks.key("ns", 1);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(tiers, EngineEvents.NONE)) {
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(key, null, bytes); // write-back: in DRAM only
            engine.setWriteThrough("ns", true);
            CatalogEntry entry =
                    Objects.requireNonNull(RaceFixtures.catalogOf(engine).get(key));

            CompletableFuture<Void> demotion = RaceFixtures.async(() -> {
                engine.demoteToLowWatermark(TierId.DRAM);
                return null;
            });
            assertThat(nvme.held.await(60, TimeUnit.SECONDS))
                    .as("the demotion is at its NVMe write")
                    .isTrue();

            // the block is stored again: its write-through is to copy it to NVMe
            CompletableFuture<TierId> put = new CompletableFuture<>();
            Thread putter = Thread.ofPlatform().daemon().start(() -> {
                try {
                    put.complete(engine.put(key, null, bytes));
                } catch (Throwable e) {
                    put.completeExceptionally(e);
                }
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!put.isDone() && !waitingForACopy(putter)) {
                assertThat(System.nanoTime())
                        .as("the put neither returned nor waited")
                        .isLessThan(deadline);
                Thread.onSpinWait();
            }
            assertThat(put)
                    .as("the put, while a demotion of its block into NVMe is still writing")
                    .isNotDone();
            assertThat(nvme.writes.get()).as("NVMe writes begun").isEqualTo(1);

            CompletableFuture<Boolean> delete = RaceFixtures.async(() -> engine.delete(key));
            while (!entry.dead()) {
                assertThat(System.nanoTime()).as("the delete never began").isLessThan(deadline);
                Thread.onSpinWait();
            }
            nvme.goOn.countDown(); // the demotion writes its copy, loses to the delete and removes it
            demotion.get(60, TimeUnit.SECONDS);
            assertThat(delete.get(60, TimeUnit.SECONDS)).isTrue();
            assertThat(put.get(60, TimeUnit.SECONDS)).isEqualTo(TierId.DRAM);

            assertThat(nvme.writes.get()).as("NVMe writes begun").isEqualTo(1);
            assertThat(files.contains(key))
                    .as("a copy of the deleted block in NVMe")
                    .isFalse();
            assertThat(engine.lookup("ns", List.of(key.hash())).blocks()).isEmpty();
        }
        try (TierEngine restarted = RaceFixtures.dramOver(RaceFixtures.nvme(dir), BLOCK)) {
            assertThat(restarted.lookup("ns", List.of(key.hash())).blocks())
                    .as("the deleted block after a restart")
                    .isEmpty();
        }
    }

    /** Whether {@code t} waits for another copy of its block into a tier to be recorded or removed. */
    private static boolean waitingForACopy(Thread t) {
        return Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getMethodName().equals("awaitCopyEnded"));
    }

    /** NVMe whose first write (a block or a batch) waits until the test lets it go on; writes counted. */
    private static final class HeldFirstWrite extends ForwardingTier {
        final CountDownLatch held = new CountDownLatch(1);
        final CountDownLatch goOn = new CountDownLatch(1);
        /** NVMe writes begun (a block or a batch each). */
        final AtomicInteger writes = new AtomicInteger();

        HeldFirstWrite(NvmeTier tier) {
            super(tier);
        }

        @Override
        public void write(BlockRecord record, MemorySegment src) throws IOException {
            holdIfFirst();
            tier.write(record, src);
        }

        @Override
        public void writeAll(List<BlockRecord> records, List<MemorySegment> sources) throws IOException {
            holdIfFirst();
            tier.writeAll(records, sources);
        }

        private void holdIfFirst() {
            if (writes.incrementAndGet() == 1) {
                held.countDown();
                try {
                    goOn.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
