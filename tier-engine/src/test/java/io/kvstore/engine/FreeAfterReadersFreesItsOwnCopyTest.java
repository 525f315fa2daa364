package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BadCopyException;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A block deleted in the moment between the NVMe tier dropping a bad copy itself and the engine clearing that
 * copy's bit: the delete's freeing waits for the reader that found the copy bad, and by the time it runs a new
 * put may have written a fresh copy of the key. The freeing must free the copy it was made for, which is gone,
 * and leave the fresh one.
 */
class FreeAfterReadersFreesItsOwnCopyTest {

    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    @Test
    void aCopyWrittenAfterADeleteOfASelfDroppedCopyIsKeptWhenTheDeletesFreeingRuns() throws Exception {
        NvmeTier files = RaceFixtures.nvme(dir);
        HoldingTier nvme = new HoldingTier(files);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = new TierEngine(
                        List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK), nvme),
                        Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)),
                        Duration.ofMinutes(2),
                        EngineEvents.NONE,
                        Clock.systemUTC())) {
            BlockKey key = TestBlocks.key("ns", 1);
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(key, null, bytes, TierId.NVME);
            flipAByte(files, key);

            // a reader finds the copy bad: NVMe drops it, and the reader stops before the engine hears of it
            CompletableFuture<@Nullable Throwable> reader = new CompletableFuture<>();
            Thread readerThread = Thread.ofPlatform().daemon().unstarted(() -> {
                try {
                    engine.get(key, arena.allocate(BLOCK));
                    reader.complete(null);
                } catch (Throwable e) {
                    reader.complete(e);
                }
            });
            CountDownLatch readerGoesOn = new CountDownLatch(1);
            nvme.stopAfterABadRead(readerThread, readerGoesOn);
            readerThread.start();
            assertThat(nvme.badRead.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(files.contains(key))
                    .as("NVMe dropped the bad copy itself")
                    .isFalse();

            assertThat(engine.delete(key)).isTrue(); // its freeing waits for the reader

            // the reader leaves; the freeing it let go is slow to run (held in the tier's delete if it gets there)
            nvme.holdDeletes();
            readerGoesOn.countDown();
            assertThat(reader.get(10, TimeUnit.SECONDS)).isInstanceOf(ChecksumMismatchException.class);

            // the block is put again, straight to NVMe: a fresh copy of the key
            assertThat(engine.put(key, null, bytes, TierId.NVME)).isEqualTo(TierId.NVME);
            assertThat(files.contains(key)).isTrue();

            nvme.releaseDeletes(); // the delete's freeing runs now
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
            while (System.nanoTime() < until) {
                assertThat(files.contains(key))
                        .as("the fresh NVMe copy, after the freeing of the deleted (self-dropped) one ran")
                        .isTrue();
                Thread.sleep(5);
            }
            MemorySegment out = arena.allocate(BLOCK);
            engine.get(key, out);
            assertThat(out.mismatch(bytes)).isEqualTo(-1);
            assertThat(engine.lookup("ns", List.of(key.hash())).blocks()).hasSize(1);
        }
    }

    private static void flipAByte(NvmeTier tier, BlockKey key) throws IOException {
        try (RandomAccessFile file = new RandomAccessFile(tier.fileOf(key).toFile(), "rw")) {
            long at = tier.offsetOf(key) % tier.fileSize() + 1234;
            file.seek(at);
            int b = file.read();
            file.seek(at);
            file.write(b ^ 0x01);
            file.getFD().sync();
        }
    }

    /**
     * The NVMe tier, with a read on one thread that stops after the tier found the copy bad (and dropped it), and
     * deletes by key that wait while held: a freeing that is slow to run.
     */
    private static final class HoldingTier extends ForwardingTier {
        final CountDownLatch badRead = new CountDownLatch(1);
        private volatile @Nullable Thread stopped;
        private volatile CountDownLatch readGoesOn = new CountDownLatch(0);
        private volatile CountDownLatch deletesGoOn = new CountDownLatch(0);

        HoldingTier(NvmeTier tier) {
            super(tier);
        }

        void stopAfterABadRead(Thread thread, CountDownLatch goOn) {
            readGoesOn = goOn;
            stopped = thread;
        }

        void holdDeletes() {
            deletesGoOn = new CountDownLatch(1);
        }

        void releaseDeletes() {
            deletesGoOn.countDown();
        }

        @Override
        public BlockRecord read(BlockKey key, MemorySegment dst) throws IOException {
            try {
                return tier.read(key, dst);
            } catch (BadCopyException bad) {
                if (Thread.currentThread() == stopped) {
                    badRead.countDown();
                    await(readGoesOn);
                }
                throw bad;
            }
        }

        @Override
        public boolean delete(BlockKey key) {
            await(deletesGoOn);
            return tier.delete(key);
        }

        private static void await(CountDownLatch latch) {
            try {
                latch.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
