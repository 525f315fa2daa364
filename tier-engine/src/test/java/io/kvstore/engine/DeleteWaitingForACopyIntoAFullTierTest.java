package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.tier.nvme.NvmeTier;
import io.kvstore.tier.nvme.NvmeTierConfig;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A namespace delete counts the NVMe slots it cleared as being freed, so a store into the full tier waits for them
 * instead of failing; but it frees them only after the copies of its blocks still being written (a write-through, a
 * demotion). When such a copy is itself waiting for room in that full tier, neither can move: the copy must give up
 * (its block is deleted), so that the delete, and the store waiting for its slots, go on at once, not after the
 * 10 s a write waits for room.
 */
class DeleteWaitingForACopyIntoAFullTierTest {

    private static final int BLOCK = 256 * 1024;

    @TempDir
    Path dir;

    @Test
    void aWriteThroughIntoAFullTierOfABlockBeingDeletedGivesUpSoTheDeleteAndAWaitingStoreGoOnPromptly()
            throws Exception {
        assertDeleteAndWaitingStoreGoOnPromptly((engine, copied, bytes) -> {
            engine.setWriteThrough("ns", true);
            engine.put(copied, null, bytes);
        });
    }

    @Test
    void aDemotionIntoAFullTierOfABlockBeingDeletedGivesUpSoTheDeleteAndAWaitingStoreGoOnPromptly() throws Exception {
        assertDeleteAndWaitingStoreGoOnPromptly((engine, copied, bytes) -> {
            engine.put(copied, null, bytes);
            engine.evict(TierId.DRAM, BLOCK, 1); // demoted to NVMe: the only block in DRAM
        });
    }

    /** Puts a block of namespace "ns" into DRAM and copies it into NVMe, on the caller's thread. */
    @FunctionalInterface
    private interface CopyInFlight {
        void run(TierEngine engine, BlockKey copied, MemorySegment bytes) throws Exception;
    }

    /**
     * NVMe full of namespace "ns"; {@code copy} of another "ns" block into NVMe stopped before it writes; the
     * namespace deleted, waiting for that copy; a store into NVMe waiting for the delete's slots. Once the copy goes
     * on and finds NVMe full, the delete returns within 2 s, the store lands, and the copy ends without an error.
     */
    private void assertDeleteAndWaitingStoreGoOnPromptly(CopyInFlight copy) throws Exception {
        BlockKey copied = TestBlocks.key("ns", 100);
        BlockKey waiting = TestBlocks.key("other", 200);
        try (Arena arena = Arena.ofShared()) {
            // 1 MiB: four blocks
            GatedTier nvme =
                    new GatedTier(new NvmeTier(new NvmeTierConfig(List.of(dir), 1 << 20, 1 << 20, 1 << 20, 2)), copied);
            TierEngine engine = RaceFixtures.dramOver(nvme, BLOCK);
            List<CompletableFuture<?>> running = new CopyOnWriteArrayList<>();
            try {
                List<BlockKey> onNvme = List.of(
                        TestBlocks.key("ns", 1),
                        TestBlocks.key("ns", 2),
                        TestBlocks.key("ns", 3),
                        TestBlocks.key("ns", 4));
                engine.setWatermarks(TierId.NVME, 1.0, 0.5); // full, NVMe demotes nothing by itself
                for (int i = 0; i < onNvme.size(); i++) {
                    engine.put(onNvme.get(i), null, TestBlocks.bytes(arena, i + 1, BLOCK), TierId.NVME);
                }
                engine.awaitMoves();
                assertThat(nvme.usedBytes()).as("NVMe is full").isEqualTo(nvme.capacityBytes());

                // a copy into NVMe registered with the engine (Residency.beginCopy) and stopped before it writes
                MemorySegment copiedBytes = TestBlocks.bytes(arena, 100, BLOCK);
                CompletableFuture<Boolean> copying = async(running, () -> {
                    copy.run(engine, copied, copiedBytes);
                    return true;
                });
                assertThat(nvme.reached.await(10, TimeUnit.SECONDS)).isTrue();

                // the delete clears the namespace's NVMe slots (counted as being freed), makes that durable, then
                // waits for the put's copy
                CompletableFuture<Integer> delete = async(running, () -> engine.deleteNamespace("ns"));
                assertThat(nvme.forgotten.await(10, TimeUnit.SECONDS)).isTrue();
                // a store into the full tier meanwhile waits for the slots the delete frees
                MemorySegment waitingBytes = TestBlocks.bytes(arena, 200, BLOCK);
                CompletableFuture<TierId> store =
                        async(running, () -> engine.put(waiting, null, waitingBytes, TierId.NVME));
                Thread.sleep(200);
                assertThat(store)
                        .as("the store while the delete's slots are not free yet")
                        .isNotDone();

                // the copy now finds NVMe full, with nothing evictable
                long opened = System.nanoTime();
                nvme.open.countDown();
                assertThat(delete.get(10, TimeUnit.SECONDS)).isEqualTo(5);
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - opened))
                        .as("ms the delete took once the copy it waits for found the tier full")
                        .isLessThan(2_000);
                assertThat(copying.get(2, TimeUnit.SECONDS))
                        .as("the copy of a block the delete removed ends without an error")
                        .isTrue();
                assertThat(store.get(2, TimeUnit.SECONDS)).isEqualTo(TierId.NVME);

                assertThat(engine.info(copied)).isNull();
                MemorySegment out = arena.allocate(BLOCK);
                engine.get(waiting, out);
                assertThat(out.mismatch(waitingBytes)).isEqualTo(-1);
            } finally {
                nvme.open.countDown();
                // the engine's tiers are closed only once no thread of the test uses them
                for (CompletableFuture<?> step : running) {
                    try {
                        step.get(30, TimeUnit.SECONDS);
                    } catch (Exception failedOrLate) {
                        // reported by the assertions above
                    }
                }
                engine.close();
            }
        }
    }

    /** What a test thread runs. */
    private static <T> CompletableFuture<T> async(List<CompletableFuture<?>> running, RaceFixtures.Step<T> step) {
        CompletableFuture<T> result = RaceFixtures.async(step);
        running.add(result);
        return result;
    }

    /**
     * NVMe whose first write of one key stops, before it writes, until the test opens the gate; and that says when
     * a deletion of more than one block was made durable (the namespace delete's, not a single copy's removal).
     */
    private static final class GatedTier extends ForwardingTier {
        final CountDownLatch reached = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);
        final CountDownLatch forgotten = new CountDownLatch(1);
        private final BlockKey gated;

        GatedTier(NvmeTier tier, BlockKey gated) {
            super(tier);
            this.gated = gated;
        }

        @Override
        public void write(BlockRecord record, MemorySegment src) throws IOException {
            if (record.key().equals(gated) && reached.getCount() > 0) {
                reached.countDown();
                try {
                    open.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            tier.write(record, src);
        }

        @Override
        public void forgetAtRestart(Collection<BlockKey> keys) {
            tier.forgetAtRestart(keys);
            if (keys.size() > 1) {
                forgotten.countDown();
            }
        }
    }
}
