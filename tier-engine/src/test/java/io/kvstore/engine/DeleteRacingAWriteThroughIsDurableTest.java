package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A delete that wins against a write-through put whose NVMe copy is already durable but not yet recorded: the put
 * then removes that copy. The delete is durable when it returns, so a crash at that moment must not bring the block
 * back at the restart, whenever the put's removal would have come.
 */
class DeleteRacingAWriteThroughIsDurableTest {

    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    @Test
    void aBlockDeletedWhileItsWriteThroughCopyIsUnrecordedIsNotFoundAfterACrashAtTheDeletesReturn() throws Exception {
        BlockKey key = TestBlocks.key("ns", 1);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            CrashingTier nvme = new CrashingTier(RaceFixtures.nvme(dir));
            TierEngine engine = RaceFixtures.dramOver(nvme, BLOCK);
            try {
                engine.setWriteThrough("ns", true);
                CompletableFuture<TierId> put = RaceFixtures.async(() -> engine.put(key, null, bytes));
                assertThat(nvme.written.await(10, TimeUnit.SECONDS))
                        .as("the put's copy through is on NVMe, not yet recorded")
                        .isTrue();

                // the process dies the moment the delete returns: nothing after that reaches the disk
                CompletableFuture<Boolean> delete = RaceFixtures.async(() -> {
                    boolean deleted = engine.delete(key);
                    nvme.crash();
                    return deleted;
                });
                try {
                    delete.get(300, TimeUnit.MILLISECONDS);
                } catch (java.util.concurrent.TimeoutException stillDeleting) {
                    // the delete waits for the put's copy: let the put go on
                }
                nvme.writeGoesOn.countDown();
                assertThat(delete.get(10, TimeUnit.SECONDS)).isTrue();
                put.get(10, TimeUnit.SECONDS);
            } finally {
                nvme.writeGoesOn.countDown();
                engine.close();
            }

            try (TierEngine restarted = RaceFixtures.dramOver(RaceFixtures.nvme(dir), BLOCK)) {
                assertThat(restarted.lookup("ns", List.of(key.hash())).blocks())
                        .as("a block deleted before the crash, found again after the restart")
                        .isEmpty();
            }
        }
    }

    /**
     * NVMe whose first write stops once durable until the test lets it go on, and that changes nothing on disk once
     * crashed: a dead process removes no copy.
     */
    private static final class CrashingTier extends ForwardingTier {
        final CountDownLatch written = new CountDownLatch(1);
        final CountDownLatch writeGoesOn = new CountDownLatch(1);
        private final AtomicBoolean crashed = new AtomicBoolean();

        CrashingTier(NvmeTier tier) {
            super(tier);
        }

        void crash() {
            crashed.set(true);
        }

        @Override
        public void write(BlockRecord record, MemorySegment src) throws IOException {
            tier.write(record, src);
            if (written.getCount() > 0) {
                written.countDown();
                try {
                    writeGoesOn.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public boolean delete(BlockKey key) {
            return !crashed.get() && tier.delete(key);
        }

        @Override
        public void forgetAtRestart(Collection<BlockKey> keys) {
            if (!crashed.get()) {
                tier.forgetAtRestart(keys);
            }
        }
    }
}
