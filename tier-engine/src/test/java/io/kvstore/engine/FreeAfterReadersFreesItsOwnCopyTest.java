package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.nvme.NvmeTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
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
        BadNvmeCopies.HoldingTier nvme = new BadNvmeCopies.HoldingTier(files);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.dramOver(nvme, BLOCK)) {
            BlockKey key = TestBlocks.key("ns", 1);
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(key, null, bytes, TierId.NVME);
            TestBlocks.flipAByte(files, key);

            // a reader finds the copy bad: NVMe drops it, and the reader stops before the engine hears of it
            CountDownLatch readerGoesOn = new CountDownLatch(1);
            CompletableFuture<@Nullable Throwable> reader =
                    nvme.readStoppedAtTheBadCopy(engine, key, arena.allocate(BLOCK), readerGoesOn);
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
}
