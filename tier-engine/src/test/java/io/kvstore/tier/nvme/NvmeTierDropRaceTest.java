package io.kvstore.tier.nvme;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.engine.TestBlocks;
import io.kvstore.tier.Checksums;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Field;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A copy of a key written while an older copy of it is being dropped keeps its index entry: the drop of the old copy
 * removes the index entry only while the map still holds that copy, so the new copy is found after a restart.
 */
class NvmeTierDropRaceTest {

    private static final int BLOCK = 8192;

    @TempDir
    Path dir;

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void freeMemory() {
        arena.close();
    }

    private NvmeTier open() throws IOException {
        return new NvmeTier(new NvmeTierConfig(List.of(dir), 8 << 20, 1 << 20, 256 * 1024, 2));
    }

    private void store(NvmeTier tier, long id) throws IOException {
        MemorySegment bytes = TestBlocks.bytes(arena, id, BLOCK);
        tier.write(new BlockRecord(TestBlocks.key("m", id), null, BLOCK, Checksums.crc32c(bytes)), bytes);
    }

    /**
     * The tier's map of copies, with a gate for one thread: after that thread looked a copy up ({@code get}) or took
     * one out ({@code remove}, {@code computeIfPresent}), it stops until the test opens the gate.
     */
    private static final class GatedMap<K, V> extends ConcurrentHashMap<K, V> {
        final CountDownLatch reached = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);
        final boolean afterLookup;
        volatile Thread gated;

        GatedMap(boolean afterLookup) {
            this.afterLookup = afterLookup;
        }

        @Override
        public V get(Object key) {
            V v = super.get(key);
            if (afterLookup) {
                stop();
            }
            return v;
        }

        @Override
        public boolean remove(Object key, Object value) {
            boolean removed = super.remove(key, value);
            if (!afterLookup) {
                stop();
            }
            return removed;
        }

        @Override
        public V computeIfPresent(K key, BiFunction<? super K, ? super V, ? extends V> f) {
            V v = super.computeIfPresent(key, f);
            if (!afterLookup) {
                stop();
            }
            return v;
        }

        private void stop() {
            if (Thread.currentThread() != gated) {
                return;
            }
            gated = null;
            reached.countDown();
            try {
                open.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static GatedMap<BlockKey, NvmeIndex.Entry> gate(NvmeTier tier, boolean afterLookup) throws Exception {
        Field blocks = NvmeTier.class.getDeclaredField("blocks");
        blocks.setAccessible(true);
        @SuppressWarnings("unchecked")
        var held = (ConcurrentHashMap<BlockKey, NvmeIndex.Entry>) blocks.get(tier);
        GatedMap<BlockKey, NvmeIndex.Entry> gated = new GatedMap<>(afterLookup);
        gated.putAll(held);
        blocks.set(tier, gated);
        return gated;
    }

    /** Runs {@code drop} on a thread that stops at the gate, then {@code meanwhile}, then lets the drop finish. */
    private static void whileStopped(GatedMap<?, ?> map, ThrowingRunnable drop, ThrowingRunnable meanwhile)
            throws Exception {
        Thread dropper = Thread.ofPlatform().unstarted(() -> {
            try {
                drop.run();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        map.gated = dropper;
        dropper.start();
        assertThat(map.reached.await(10, TimeUnit.SECONDS)).isTrue();
        meanwhile.run();
        map.open.countDown();
        dropper.join(10_000);
        assertThat(dropper.isAlive()).isFalse();
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void aCopyWrittenWhileTheTierDropsTheOldOneItselfIsFoundAfterARestart() throws Exception {
        BlockKey key = TestBlocks.key("m", 1);
        try (NvmeTier tier = open()) {
            store(tier, 1);
            GatedMap<BlockKey, NvmeIndex.Entry> map = gate(tier, false);
            // the old copy failed its check: the tier drops it, and stops right after it left the map
            whileStopped(map, () -> tier.dropCorrupt(key), () -> store(tier, 1));
            assertThat(tier.contains(key)).as("the new copy").isTrue();
        }
        assertTheNewCopyIsFoundAfterARestart(key);
    }

    @Test
    void aLateDeleteOfADroppedCopyLeavesTheIndexEntryOfTheNewCopy() throws Exception {
        BlockKey key = TestBlocks.key("m", 1);
        try (NvmeTier tier = open()) {
            store(tier, 1);
            long first = tier.copyOf(key);
            GatedMap<BlockKey, NvmeIndex.Entry> map = gate(tier, true);
            // the delete looked the first copy up; meanwhile the tier dropped it itself and a new copy was written
            whileStopped(map, () -> assertThat(tier.delete(key, first)).isFalse(), () -> {
                tier.dropCorrupt(key);
                store(tier, 1);
            });
            assertThat(tier.contains(key)).as("the new copy").isTrue();
        }
        assertTheNewCopyIsFoundAfterARestart(key);
    }

    /** Reopens the tier: its index names {@code key} alone, the copy written after the old one was dropped. */
    private void assertTheNewCopyIsFoundAfterARestart(BlockKey key) throws IOException {
        try (NvmeTier tier = open()) {
            assertThat(tier.recovered())
                    .as("the copy written after the old one was dropped")
                    .extracting(BlockRecord::key)
                    .containsExactly(key);
        }
    }
}
