package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.catalog.Catalog;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.NvmeTier;
import io.kvstore.tier.nvme.NvmeTierConfig;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * What the race tests share to force an interleaving: an engine whose fastest tier demotes at once, one of DRAM
 * over a given NVMe tier, a small NVMe tier, the engine's catalog (whose entries a test holds to stop a thread at a
 * known point), and a wait until a thread is stopped there.
 */
final class RaceFixtures {

    private RaceFixtures() {}

    /**
     * Engine events as the race tests watch them: each copy added and removed, as "TIER key", and a hook run once,
     * on the mover's thread, when a move from one given tier to another has copied its block (before the move
     * records it), which is where the tests make the other thread act.
     */
    static final class Recorder implements EngineEvents {
        final List<String> added = new CopyOnWriteArrayList<>();
        final List<String> removed = new CopyOnWriteArrayList<>();
        private final TierId from;
        private final TierId to;
        private final AtomicReference<@Nullable Runnable> onMoved = new AtomicReference<>();

        Recorder(TierId from, TierId to) {
            this.from = from;
            this.to = to;
        }

        /** Runs {@code hook} at the next move from {@code from} to {@code to}. */
        void onMove(Runnable hook) {
            onMoved.set(hook);
        }

        @Override
        public void copyAdded(TierId tier, BlockRecord block) {
            added.add(tier + " " + block.key());
        }

        @Override
        public void copyRemoved(TierId tier, BlockKey key, int length) {
            removed.add(tier + " " + key);
        }

        @Override
        public void moved(TierId moveFrom, TierId moveTo, long bytes, long nanos) {
            Runnable hook = moveFrom == from && moveTo == to ? onMoved.getAndSet(null) : null;
            if (hook != null) {
                hook.run();
            }
        }
    }

    /**
     * An engine over {@code tiers} whose first (fastest) tier is LRU with watermarks 1.0 / 0.1, so it demotes
     * down to a tenth once full; 2-minute leases, the system clock.
     */
    static TierEngine demotingEngine(List<BlockTier> tiers, EngineEvents events) {
        return new TierEngine(
                tiers,
                Map.of(tiers.getFirst().id(), new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.1, false)),
                Duration.ofMinutes(2),
                events,
                Clock.systemUTC());
    }

    /**
     * An engine over DRAM of 8 blocks of {@code blockBytes} (LRU, watermarks 1.0 / 0.5, no promotion on a hit) and
     * {@code nvme}; 2-minute leases, the system clock, no events.
     */
    static TierEngine dramOver(BlockTier nvme, int blockBytes) {
        return new TierEngine(
                List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * blockBytes, blockBytes), nvme),
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)),
                Duration.ofMinutes(2),
                EngineEvents.NONE,
                Clock.systemUTC());
    }

    /** A 16 MiB NVMe tier in {@code dir} (4 MiB files, 1 MiB slabs, 2 I/O threads). */
    static NvmeTier nvme(Path dir) throws IOException {
        return new NvmeTier(new NvmeTierConfig(List.of(dir), 16 << 20, 4 << 20, 1 << 20, 2));
    }

    static Catalog catalogOf(TierEngine engine) throws Exception {
        var field = TierEngine.class.getDeclaredField("catalog");
        field.setAccessible(true);
        return (Catalog) field.get(engine);
    }

    /** Waits (10 s at most) until {@code t} is in one of {@code states}: stopped where the test holds it. */
    static void awaitStopped(Thread t, Set<Thread.State> states) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!states.contains(t.getState())) {
            assertThat(System.nanoTime()).as("thread never blocked").isLessThan(deadline);
            Thread.sleep(1);
        }
    }

    /**
     * A store of a new block ({@code id}) into {@code engine}'s full DRAM tier, on a thread of its own, while a
     * reader holds the one slot on its way: still waiting after 300 ms; once {@code finishRead} lets the reader go
     * (its {@code read} ends), it lands in DRAM and reads back whole.
     */
    static void assertStoreWaitsForTheSlotThenLands(
            TierEngine engine, Arena arena, int blockBytes, long id, CountDownLatch finishRead, Future<?> read)
            throws Exception {
        BlockKey fresh = TestBlocks.key("ns", id);
        MemorySegment freshBytes = TestBlocks.bytes(arena, id, blockBytes);
        CompletableFuture<TierId> put = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                put.complete(engine.put(fresh, null, freshBytes));
            } catch (Throwable e) {
                put.completeExceptionally(e);
            }
        });
        Thread.sleep(300);
        assertThat(put)
                .as("the store while the dropped copy's slot waits for its reader")
                .isNotDone();
        finishRead.countDown();
        read.get(10, TimeUnit.SECONDS);

        // the reader left, the slot is freed: the store lands in DRAM and reads back whole
        assertThat(put.get(30, TimeUnit.SECONDS)).isEqualTo(TierId.DRAM);
        MemorySegment out = arena.allocate(blockBytes);
        engine.get(fresh, out);
        assertThat(out.mismatch(freshBytes)).isEqualTo(-1);
    }

    /** What a test thread runs. */
    @FunctionalInterface
    interface Step<T> {
        T run() throws Exception;
    }

    /** Runs {@code step} on a thread of its own; the future completes with its result or what it threw. */
    static <T> CompletableFuture<T> async(Step<T> step) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                result.complete(step.run());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        return result;
    }
}
