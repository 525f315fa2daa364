package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A delete of a block that a reader holds for longer than the removal waits for readers (a fetch streaming
 * the block to a stalled client): the wait is shortened here instead of taking 30 s.
 */
class SlowReaderDeleteTest {

    private static final int BLOCK = 64 * 1024;

    @AfterEach
    void restoreWait() {
        Residency.readerWaitNanos = Residency.READER_WAIT_NANOS;
    }

    @Test
    void aDeleteOutlastedByAReaderFreesTheSlotWhenTheReaderLeavesAndTheKeyCanBeStoredAgain() throws Exception {
        Residency.readerWaitNanos = TimeUnit.MILLISECONDS.toNanos(200);
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        List<BlockTier> tiers = List.of(dram);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(tiers, EngineEvents.NONE)) {
            BlockKey key = TestBlocks.key("ns", 1);
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(key, null, bytes);
            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch finishRead = new CountDownLatch(1);
            CompletableFuture<Void> read = CompletableFuture.runAsync(
                    () -> {
                        try {
                            engine.read(key, (tier, record, view) -> {
                                reading.countDown();
                                try {
                                    finishRead.await(30, TimeUnit.SECONDS); // a client that stopped reading
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                                return null;
                            });
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    },
                    task -> Thread.ofPlatform().daemon().start(task));
            assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();

            // the delete outlasts its wait for the reader: the block is gone for clients all the same
            assertThat(engine.delete(key)).isTrue();
            assertThat(engine.lookup("ns", List.of(key.hash())).blocks()).isEmpty();

            finishRead.countDown();
            read.get(10, TimeUnit.SECONDS);
            // the slot is freed once the reader left, and the key can be stored again
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (dram.blockCount() > 0) {
                assertThat(System.nanoTime()).as("slot never freed").isLessThan(deadline);
                Thread.sleep(1);
            }
            assertThat(engine.put(key, null, bytes)).isEqualTo(TierId.DRAM);
            MemorySegment out = arena.allocate(BLOCK);
            engine.get(key, out);
            assertThat(out.mismatch(bytes)).isEqualTo(-1);
            assertThat(dram.blockCount()).isEqualTo(1);
        }
    }
}
