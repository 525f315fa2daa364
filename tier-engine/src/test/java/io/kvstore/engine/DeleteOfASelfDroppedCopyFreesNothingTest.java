package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.nvme.NvmeTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A block deleted while a slow client still reads it, whose NVMe copy the tier had already dropped itself (it failed
 * its checksum): the delete has no NVMe slot to free after that reader. So a store into the full NVMe tier must not
 * wait for one: it is refused at once, as when nothing is being freed, not after the 10 s a store waits for room.
 */
class DeleteOfASelfDroppedCopyFreesNothingTest {

    private static final int BLOCK = 256 * 1024;

    @TempDir
    Path dir;

    @Test
    void aStoreIntoTheFullTierDoesNotWaitForTheDeletedBlocksReader() throws Exception {
        NvmeTier files = RaceFixtures.nvme(dir);
        BlockKey key = TestBlocks.key("ns", 1);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.dramOver(files, BLOCK)) {
            engine.put(key, null, TestBlocks.bytes(arena, 1, BLOCK), TierId.NVME);

            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch finishRead = new CountDownLatch(1);
            CompletableFuture<TierId> slow = RaceFixtures.async(() -> engine.read(key, (tier, record, view) -> {
                reading.countDown();
                try {
                    finishRead.await(60, TimeUnit.SECONDS); // a client that stopped reading
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return tier;
            }));
            try {
                assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();

                // the copy goes bad, and the tier drops it when it finds so, before the engine hears of it
                TestBlocks.flipAByte(files, key);
                assertThatThrownBy(() -> files.read(key, arena.allocate(BLOCK)))
                        .isInstanceOf(ChecksumMismatchException.class);
                assertThat(files.contains(key)).isFalse();
                assertThat(engine.delete(key)).isTrue();

                // NVMe filled with pinned blocks: the store that finds it full has nothing to wait for
                CompletableFuture<Integer> fill = RaceFixtures.async(() -> fillPinned(engine, arena));
                assertThat(fill.get(5, TimeUnit.SECONDS))
                        .as("blocks stored before the tier was full")
                        .isPositive();
            } finally {
                finishRead.countDown();
            }
            assertThat(slow.get(10, TimeUnit.SECONDS)).isEqualTo(TierId.NVME);
            // the reader gone, the dead entry leaves the catalog (on a thread of its own, at once)
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (engine.info(key) != null && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(engine.info(key)).isNull();
        }
    }

    /** Stores pinned blocks straight into NVMe until one is refused as the tier is full; returns how many stayed. */
    private static int fillPinned(TierEngine engine, Arena arena) throws Exception {
        List<BlockKey> stored = new ArrayList<>();
        for (long id = 100; ; id++) {
            BlockKey next = TestBlocks.key("fill", id);
            MemorySegment bytes = TestBlocks.bytes(arena, id, BLOCK);
            try {
                engine.put(next, null, bytes, TierId.NVME);
            } catch (TierFullException full) {
                return stored.size();
            }
            if (engine.pin(List.of(next)) == 1) { // else the tier's own eviction took it first: room again
                stored.add(next);
            }
        }
    }
}
