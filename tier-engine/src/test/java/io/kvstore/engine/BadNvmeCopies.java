package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.tier.BadCopyException;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Collection;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * What the tests of a bad NVMe copy share beside {@link TestBlocks#flipAByte} (a byte of a copy flipped on disk, so
 * that its next read fails the checksum and the NVMe tier drops the copy itself): a tier that stops such a read and
 * holds what follows.
 */
final class BadNvmeCopies {

    private BadNvmeCopies() {}

    /**
     * The NVMe tier, with a read on one thread that stops after the tier found the copy bad (and dropped it), and
     * deletes by key and durable forgetting that wait while held; nothing waits until the test asks for it.
     */
    static final class HoldingTier extends ForwardingTier {
        /** Counted down when a durable forgetting begins. */
        final CountDownLatch forgetting = new CountDownLatch(1);

        private final CountDownLatch badRead = new CountDownLatch(1);
        private volatile @Nullable Thread stopped;
        private volatile CountDownLatch readGoesOn = new CountDownLatch(0);
        private volatile CountDownLatch deletesGoOn = new CountDownLatch(0);
        private volatile CountDownLatch forgetGoesOn = new CountDownLatch(0);

        HoldingTier(NvmeTier tier) {
            super(tier);
        }

        /**
         * Reads {@code key} from {@code engine} into {@code dst} on a thread of its own, and waits until that read
         * found the copy bad and stopped (the tier dropped the copy, the engine has not heard of it): the read goes
         * on once {@code goOn} is counted down, and the future holds what it threw, or null.
         */
        CompletableFuture<@Nullable Throwable> readStoppedAtTheBadCopy(
                TierEngine engine, BlockKey key, MemorySegment dst, CountDownLatch goOn) throws InterruptedException {
            CompletableFuture<@Nullable Throwable> reader = new CompletableFuture<>();
            Thread readerThread = Thread.ofPlatform().daemon().unstarted(() -> {
                try {
                    engine.get(key, dst);
                    reader.complete(null);
                } catch (Throwable e) {
                    reader.complete(e);
                }
            });
            readGoesOn = goOn;
            stopped = readerThread;
            readerThread.start();
            assertThat(badRead.await(10, TimeUnit.SECONDS)).isTrue();
            return reader;
        }

        /** Holds every delete by key until {@link #releaseDeletes()}. */
        void holdDeletes() {
            deletesGoOn = new CountDownLatch(1);
        }

        /** Lets the held deletes go on. */
        void releaseDeletes() {
            deletesGoOn.countDown();
        }

        /** Holds every durable forgetting until the returned latch is counted down. */
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
        public boolean delete(BlockKey key) {
            await(deletesGoOn);
            return tier.delete(key);
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
