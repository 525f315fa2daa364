package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A block deleted while the NVMe tier has just dropped its bad copy itself, and put again before the delete made
 * its deletion durable: the reader that found the copy bad would let the dead entry leave the catalog, and the new
 * put write a fresh NVMe copy whose index entry the delete's forgetting, by key, then removed. The deleted entry
 * stays until the deletion is durable, so the put waits for it and then writes its copy: the put returned, so its
 * block must be found after a restart.
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
            BadNvmeCopies.HoldingTier nvme = new BadNvmeCopies.HoldingTier(files);
            try (TierEngine engine = RaceFixtures.dramOver(nvme, BLOCK)) {
                engine.put(key, null, bytes, TierId.NVME);
                TestBlocks.flipAByte(files, key);

                // a reader finds the copy bad: NVMe drops it, and the reader stops before the engine hears of it
                CountDownLatch readerGoesOn = new CountDownLatch(1);
                CompletableFuture<@Nullable Throwable> reader =
                        nvme.readStoppedAtTheBadCopy(engine, key, arena.allocate(BLOCK), readerGoesOn);

                // the delete clears the bits, then stops before it makes the deletion durable
                CountDownLatch forgetGoesOn = nvme.holdForgetting();
                CompletableFuture<Boolean> delete = CompletableFuture.supplyAsync(
                        () -> engine.delete(key),
                        task -> Thread.ofPlatform().daemon().start(task));
                assertThat(nvme.forgetting.await(10, TimeUnit.SECONDS)).isTrue();

                readerGoesOn.countDown(); // the reader leaves and drops the bad copy: the dead entry leaves too
                assertThat(reader.get(10, TimeUnit.SECONDS)).isInstanceOf(ChecksumMismatchException.class);

                // the block is put again, straight to NVMe: its fresh copy waits until the deletion is durable
                CompletableFuture<TierId> put = CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return engine.put(key, null, bytes, TierId.NVME);
                            } catch (IOException e) {
                                throw new UncheckedIOException(e);
                            }
                        },
                        task -> Thread.ofPlatform().daemon().start(task));
                assertThat(put)
                        .as("a put of the key while its delete is not yet durable")
                        .failsWithin(300, TimeUnit.MILLISECONDS)
                        .withThrowableOfType(TimeoutException.class);

                forgetGoesOn.countDown();
                assertThat(delete.get(10, TimeUnit.SECONDS)).isTrue();
                assertThat(put.get(10, TimeUnit.SECONDS)).isEqualTo(TierId.NVME);
                assertThat(engine.lookup("ns", List.of(key.hash())).blocks()).hasSize(1);
            }

            try (TierEngine restarted = RaceFixtures.dramOver(RaceFixtures.nvme(dir), BLOCK)) {
                assertThat(restarted.lookup("ns", List.of(key.hash())).blocks())
                        .as("a block put (and acknowledged) after the delete began, after a restart")
                        .hasSize(1);
                MemorySegment out = arena.allocate(BLOCK);
                restarted.get(key, out);
                assertThat(out.mismatch(bytes)).isEqualTo(-1);
            }
        }
    }
}
