package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BadCopyException;
import io.kvstore.tier.BlockTier;
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
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A block deleted while the NVMe tier has just dropped its bad copy itself, and put again before the delete made
 * its deletion durable: the reader that found the copy bad lets the dead entry leave the catalog, so the new put
 * writes a fresh NVMe copy at once. The delete makes the deletion of the copy it dropped durable, not of the fresh
 * one: the put returned, so its block must be found after a restart.
 */
class PutRacingADeleteOfASelfDroppedCopyIsDurableTest {

    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    @Test
    void aBlockPutAgainWhileItsDeleteIsUnderWayIsFoundAfterARestart() throws Exception {
        BlockKey key = TestBlocks.key("ns", 1);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            NvmeTier files = RaceFixtures.nvme(dir);
            HoldingTier nvme = new HoldingTier(files);
            try (TierEngine engine = open(nvme)) {
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

                // the delete clears the bits, then stops before it makes the deletion durable
                CountDownLatch forgetGoesOn = nvme.holdForgetting();
                CompletableFuture<Boolean> delete = CompletableFuture.supplyAsync(
                        () -> engine.delete(key),
                        task -> Thread.ofPlatform().daemon().start(task));
                assertThat(nvme.forgetting.await(10, TimeUnit.SECONDS)).isTrue();

                readerGoesOn.countDown(); // the reader leaves and drops the bad copy: the dead entry leaves too
                assertThat(reader.get(10, TimeUnit.SECONDS)).isInstanceOf(ChecksumMismatchException.class);

                // the block is put again, straight to NVMe: a fresh, durable copy of the key
                assertThat(engine.put(key, null, bytes, TierId.NVME)).isEqualTo(TierId.NVME);

                forgetGoesOn.countDown();
                assertThat(delete.get(10, TimeUnit.SECONDS)).isTrue();
                assertThat(engine.lookup("ns", List.of(key.hash())).blocks()).hasSize(1);
            }

            try (TierEngine restarted = open(RaceFixtures.nvme(dir))) {
                assertThat(restarted.lookup("ns", List.of(key.hash())).blocks())
                        .as("a block put (and acknowledged) after the delete began, after a restart")
                        .hasSize(1);
                MemorySegment out = arena.allocate(BLOCK);
                restarted.get(key, out);
                assertThat(out.mismatch(bytes)).isEqualTo(-1);
            }
        }
    }

    private static TierEngine open(BlockTier nvme) {
        return new TierEngine(
                List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK), nvme),
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)),
                Duration.ofMinutes(2),
                EngineEvents.NONE,
                Clock.systemUTC());
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
     * a durable forgetting that waits while held.
     */
    private static final class HoldingTier extends ForwardingTier {
        final CountDownLatch badRead = new CountDownLatch(1);
        final CountDownLatch forgetting = new CountDownLatch(1);
        private volatile @Nullable Thread stopped;
        private volatile CountDownLatch readGoesOn = new CountDownLatch(0);
        private volatile CountDownLatch forgetGoesOn = new CountDownLatch(0);

        HoldingTier(NvmeTier tier) {
            super(tier);
        }

        void stopAfterABadRead(Thread thread, CountDownLatch goOn) {
            readGoesOn = goOn;
            stopped = thread;
        }

        CountDownLatch holdForgetting() {
            forgetGoesOn = new CountDownLatch(1);
            return forgetGoesOn;
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
        public void forgetAtRestart(Collection<BlockKey> keys) {
            forgetting.countDown();
            await(forgetGoesOn);
            tier.forgetAtRestart(keys);
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
