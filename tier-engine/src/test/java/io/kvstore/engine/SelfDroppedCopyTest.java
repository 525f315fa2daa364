package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
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
 * A copy the NVMe tier drops itself when it fails its checksum, while a slow client still reads the block: the
 * freeing the engine leaves to that client's leaving must not take a copy of the same key written since.
 */
class SelfDroppedCopyTest {

    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    @Test
    void aDurableCopyWrittenAgainWhileTheBadOneAwaitsItsReaderIsKept() throws Exception {
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        NvmeTier files = RaceFixtures.nvme(dir);
        PausingTier nvme = new PausingTier(files);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = new TierEngine(
                        List.of(dram, nvme),
                        Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, true)),
                        Duration.ofMinutes(2),
                        EngineEvents.NONE,
                        Clock.systemUTC())) {
            BlockKey key = TestBlocks.key("ns", 1);
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(key, null, bytes, TierId.NVME);

            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch finishRead = new CountDownLatch(1);
            CompletableFuture<TierId> slow = CompletableFuture.supplyAsync(
                    () -> read(engine, key, reading, finishRead),
                    task -> Thread.ofPlatform().daemon().start(task));
            try {
                assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue(); // a slow client holds the block

                // a second reader chose the NVMe copy and is about to read it
                CountDownLatch goOn = new CountDownLatch(1);
                CompletableFuture<@Nullable Throwable> second = new CompletableFuture<>();
                Thread secondReader = Thread.ofPlatform().daemon().unstarted(() -> {
                    try {
                        engine.get(key, arena.allocate(BLOCK));
                        second.complete(null);
                    } catch (Throwable e) {
                        second.complete(e);
                    }
                });
                nvme.pause(secondReader, goOn);
                secondReader.start();
                RaceFixtures.awaitStopped(secondReader, java.util.Set.of(Thread.State.TIMED_WAITING));

                engine.get(key, arena.allocate(BLOCK)); // a hit on NVMe: promoted into DRAM
                engine.awaitMoves();
                assertThat(engine.info(key).tiers()).containsExactlyInAnyOrder(TierId.DRAM, TierId.NVME);

                // the NVMe copy goes bad; the second reader finds it so, and NVMe drops it
                TestBlocks.flipAByte(files, key);
                goOn.countDown();
                assertThat(second.get(10, TimeUnit.SECONDS)).isInstanceOf(ChecksumMismatchException.class);
                assertThat(engine.info(key).tiers()).containsExactly(TierId.DRAM);

                // a write-through put of the block writes it to NVMe again before it returns
                engine.setWriteThrough("ns", true);
                engine.put(key, null, bytes);
                assertThat(engine.info(key).tiers()).containsExactlyInAnyOrder(TierId.DRAM, TierId.NVME);
                assertThat(files.contains(key)).isTrue();
            } finally {
                finishRead.countDown();
            }
            assertThat(slow.get(10, TimeUnit.SECONDS)).isEqualTo(TierId.NVME);

            // the slow client left: the bad copy's freeing, which waited for it, ran (it starts at once)
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
            while (System.nanoTime() < until) {
                assertThat(files.contains(key))
                        .as("the NVMe copy the write-through put made, published in the catalog")
                        .isTrue();
                Thread.sleep(5);
            }
            engine.evict(TierId.DRAM, 0, 1); // only the NVMe copy is left
            MemorySegment out = arena.allocate(BLOCK);
            engine.get(key, out);
            assertThat(out.mismatch(bytes)).isEqualTo(-1);
        }
    }

    private static TierId read(TierEngine engine, BlockKey key, CountDownLatch reading, CountDownLatch finish) {
        try {
            return engine.read(key, (tier, record, view) -> {
                reading.countDown();
                try {
                    finish.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return tier;
            });
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    /** The NVMe tier, whose reads on one chosen thread wait until the test lets them go on. */
    private static final class PausingTier extends ForwardingTier {
        private volatile @Nullable Thread paused;
        private volatile CountDownLatch goOn = new CountDownLatch(0);

        PausingTier(NvmeTier tier) {
            super(tier);
        }

        void pause(Thread thread, CountDownLatch until) {
            goOn = until;
            paused = thread;
        }

        @Override
        public BlockRecord read(BlockKey key, MemorySegment dst) throws IOException {
            if (Thread.currentThread() == paused) {
                try {
                    goOn.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return tier.read(key, dst);
        }
    }
}
