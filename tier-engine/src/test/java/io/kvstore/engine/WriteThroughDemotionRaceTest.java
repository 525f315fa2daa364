package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A write-through copy to NVMe and a demotion of the same block into NVMe at the same moment, with the
 * interleaving forced: the demoter has written its copy and not yet recorded it when a store of the block
 * in a write-through namespace starts its copy through.
 */
class WriteThroughDemotionRaceTest {

    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    @Test
    void aCopyWrittenThroughWhileTheBlockIsDemotedIsAnnouncedOnce() throws Exception {
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        BlockKey key = TestBlocks.key("ns", 1);
        RaceFixtures.Recorder events = new RaceFixtures.Recorder(TierId.DRAM, TierId.NVME);
        List<String> added = events.added;
        List<BlockTier> tiers = List.of(dram, RaceFixtures.nvme(dir));
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(tiers, events)) {
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(key, null, bytes); // write-back: in DRAM only
            engine.setWriteThrough("ns", true);
            CompletableFuture<TierId> put = new CompletableFuture<>();
            // the demoter has written the NVMe copy and not recorded it yet: a client stores the block again,
            // which copies it through to NVMe (the block is not recorded there)
            // (it waits for the demoter's copy, still being written, to be recorded or removed: outside its read,
            // so the demoter's claim is the block's only reader when it finishes)
            events.onMove(() -> {
                Thread putter = Thread.ofPlatform().daemon().start(() -> {
                    try {
                        put.complete(engine.put(key, null, bytes));
                    } catch (Throwable e) {
                        put.completeExceptionally(e);
                    }
                });
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!waitingForTheDemotersCopy(putter) && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
            });
            engine.demoteToLowWatermark(TierId.DRAM);
            assertThat(put.get(10, TimeUnit.SECONDS)).isEqualTo(TierId.DRAM);

            assertThat(engine.info(key).tiers()).contains(TierId.NVME);
            // once per copy, as EngineEvents#copyAdded promises
            assertThat(added).containsExactly("DRAM " + key, "NVME " + key);
            assertThat(engine.info(key).tiers())
                    .as("the demoter, its claim the only reader left, moved the block out of DRAM")
                    .containsExactly(TierId.NVME);
        }
    }

    /** Whether {@code t} waits for another copy of its block into a tier to be recorded or removed. */
    private static boolean waitingForTheDemotersCopy(Thread t) {
        return Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getMethodName().equals("awaitCopyEnded"));
    }
}
