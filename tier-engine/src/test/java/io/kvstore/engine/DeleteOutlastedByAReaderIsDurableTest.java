package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.nvme.NvmeTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A block on NVMe deleted while a slow client still reads it: the delete returns at once and the slot is freed
 * when the client leaves, but the deletion itself is durable when the delete returns. A crash in between must
 * not bring the block back at the restart.
 */
class DeleteOutlastedByAReaderIsDurableTest {

    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    @Test
    void aBlockDeletedWhileASlowClientReadsItIsNotFoundAfterACrash() throws Exception {
        deletedBlockStaysDeletedAfterACrash(
                (engine, key) -> assertThat(engine.delete(key)).isTrue());
    }

    @Test
    void aNamespaceDeletedWhileASlowClientReadsOneOfItsBlocksIsNotFoundAfterACrash() throws Exception {
        deletedBlockStaysDeletedAfterACrash((engine, key) ->
                assertThat(engine.deleteNamespace(key.namespace())).isEqualTo(1));
    }

    /** How a test deletes the block a slow client reads. */
    @FunctionalInterface
    private interface Delete {
        void delete(TierEngine engine, BlockKey key) throws Exception;
    }

    private void deletedBlockStaysDeletedAfterACrash(Delete delete) throws Exception {
        BlockKey key = TestBlocks.key("ns", 1);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch finishRead = new CountDownLatch(1);
            CrashingTier nvme = new CrashingTier(RaceFixtures.nvme(dir));
            CompletableFuture<Boolean> slow;
            TierEngine engine = RaceFixtures.dramOver(nvme, BLOCK);
            try {
                engine.put(key, null, bytes, TierId.NVME);
                slow = CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return engine.read(key, (tier, record, view) -> {
                                    reading.countDown();
                                    awaitQuietly(finishRead); // a client that stopped reading
                                    return tier == TierId.NVME && view.mismatch(bytes) == -1;
                                });
                            } catch (Exception e) {
                                throw new RuntimeException(e);
                            }
                        },
                        task -> Thread.ofPlatform().daemon().start(task));
                assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();

                delete.delete(engine, key); // returns at once: the client still holds the block
                assertThat(engine.lookup("ns", List.of(key.hash())).blocks()).isEmpty();
                assertThat(nvme.contains(key))
                        .as("the slot is kept while the client reads it")
                        .isTrue();
                nvme.crash(); // the process dies before the client leaves: the freeing after it never runs
            } finally {
                engine.close();
            }

            try (TierEngine restarted = RaceFixtures.dramOver(RaceFixtures.nvme(dir), BLOCK)) {
                assertThat(restarted.lookup("ns", List.of(key.hash())).blocks())
                        .as("a block deleted before the crash, found again after the restart")
                        .isEmpty();
                assertThatThrownBy(() -> restarted.get(key, arena.allocate(BLOCK)))
                        .isInstanceOf(BlockNotFoundException.class);
                assertThat(restarted.tier(TierId.NVME).usedBytes())
                        .as("the deleted block's slot is free space after the restart")
                        .isZero();
            } finally {
                finishRead.countDown();
            }
            assertThat(slow.get(10, TimeUnit.SECONDS))
                    .as("the slow client read the block's bytes from NVMe")
                    .isTrue();
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** NVMe that stops freeing once crashed: a dead process runs no freeing left for a reader's leaving. */
    private static final class CrashingTier extends ForwardingTier {
        private final AtomicBoolean crashed = new AtomicBoolean();

        CrashingTier(NvmeTier tier) {
            super(tier);
        }

        void crash() {
            crashed.set(true);
        }

        @Override
        public boolean delete(BlockKey key) {
            return !crashed.get() && tier.delete(key);
        }
    }
}
