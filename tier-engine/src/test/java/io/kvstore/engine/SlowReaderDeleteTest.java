package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.EmulatedDeviceMemoryProvider;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A copy dropped (a delete, a failed checksum) while a reader still holds the block (a fetch streaming it to a
 * stalled client, a move): whoever drops it goes on at once, and the slot is freed when the last reader leaves.
 */
class SlowReaderDeleteTest {

    private static final int BLOCK = 64 * 1024;
    /** Each task on a thread of its own: one stuck in the engine must not hold up another (nor another test). */
    private static final Executor OWN_THREAD =
            task -> Thread.ofPlatform().daemon().start(task);

    @Test
    void aDeleteOutlastedByAReaderFreesTheSlotWhenTheReaderLeavesAndTheKeyCanBeStoredAgain() throws Exception {
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        List<BlockTier> tiers = List.of(dram);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(tiers, EngineEvents.NONE)) {
            BlockKey key = TestBlocks.key("ns", 1);
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(key, null, bytes);
            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch finishRead = new CountDownLatch(1);
            CompletableFuture<TierId> read =
                    slowRead(engine, key, reading, finishRead); // a client that stopped reading
            assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();

            // the delete does not wait for the reader: the block is gone for clients all the same
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

    @Test
    void aStoreIntoTheFullTierWaitsForTheSlotOfABlockDeletedWhileBeingRead() throws Exception {
        storeWaitsForTheSlotOfACopyDroppedWhileRead((engine, dram, victim) -> {
            // the delete does not wait for the reader: the block is gone for clients, its slot is not free yet
            assertThat(engine.delete(victim)).isTrue();
        });
    }

    @Test
    void aStoreIntoTheFullTierWaitsForTheSlotOfACopyAnotherReaderFoundCorrupt() throws Exception {
        storeWaitsForTheSlotOfACopyDroppedWhileRead((engine, dram, victim) -> {
            // a late write lands on the slot: the next reader finds the copy corrupt and drops it
            long offset = dram.offsetOf(victim);
            dram.region()
                    .set(ValueLayout.JAVA_BYTE, offset, (byte) ~dram.region().get(ValueLayout.JAVA_BYTE, offset));
            try {
                engine.get(victim, MemorySegment.ofArray(new byte[BLOCK]));
                throw new AssertionError("a corrupt copy, and no other, was served");
            } catch (ChecksumMismatchException onlyCopyDropped) {
                // no slower tier to serve it from
            }
        });
    }

    /**
     * The last reader of a deleted block leaves, and its slot is freed, just after a store's write found the full
     * tier without room and before the store looked whether a slot was freed meanwhile: the store takes that slot
     * instead of failing with {@link TierFullException}.
     */
    @Test
    void aStoreWhoseWriteFoundTheTierFullTakesASlotFreedJustAfter() throws Exception {
        BlockKey victim = TestBlocks.key("ns", 1);
        BlockKey fresh = TestBlocks.key("ns", 9);
        CountDownLatch finishRead = new CountDownLatch(1);
        FreedAfterFullWrite dram = new FreedAfterFullWrite(
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK), victim, fresh, finishRead);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(List.of(dram), EngineEvents.NONE)) {
            engine.put(victim, null, TestBlocks.bytes(arena, 1, BLOCK));
            List<BlockKey> pinned = new ArrayList<>();
            for (long id = 2; id <= 8; id++) {
                BlockKey key = TestBlocks.key("ns", id);
                engine.put(key, null, TestBlocks.bytes(arena, id, BLOCK));
                pinned.add(key);
            }
            assertThat(engine.pin(pinned)).isEqualTo(7);
            CountDownLatch reading = new CountDownLatch(1);
            CompletableFuture<TierId> read = slowRead(engine, victim, reading, finishRead);
            assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(engine.delete(victim)).isTrue();
            assertThat(dram.blockCount())
                    .as("the victim's slot waits for its reader")
                    .isEqualTo(8);

            // the store's first write finds DRAM full; inside it the reader leaves and the victim's slot is freed
            MemorySegment freshBytes = TestBlocks.bytes(arena, 9, BLOCK);
            assertThat(engine.put(fresh, null, freshBytes)).isEqualTo(TierId.DRAM);
            assertThat(dram.freedDuringFullWrite())
                    .as("the slot was freed between the failed write and the store's look")
                    .isTrue();
            assertThat(read.get(10, TimeUnit.SECONDS)).isEqualTo(TierId.DRAM);
            MemorySegment out = arena.allocate(BLOCK);
            engine.get(fresh, out);
            assertThat(out.mismatch(freshBytes)).isEqualTo(-1);
        }
    }

    /**
     * DRAM whose first write of {@code fresh} fails full, as the real tier answers it, and only returns once the
     * slow reader of the deleted {@code victim} was let go and the deferred free of the victim's slot has run to
     * its end: the free lands after the failed write and before the store looks for room coming.
     */
    private static final class FreedAfterFullWrite extends ForwardingTier {
        private final BlockKey victim;
        private final BlockKey fresh;
        private final CountDownLatch finishRead;
        private final CompletableFuture<Thread> freeing = new CompletableFuture<>();
        private final AtomicBoolean failedOnce = new AtomicBoolean();
        private final AtomicBoolean freedDuringFullWrite = new AtomicBoolean();

        FreedAfterFullWrite(MemoryTier tier, BlockKey victim, BlockKey fresh, CountDownLatch finishRead) {
            super(tier);
            this.victim = victim;
            this.fresh = fresh;
            this.finishRead = finishRead;
        }

        boolean freedDuringFullWrite() {
            return freedDuringFullWrite.get();
        }

        @Override
        public void write(BlockRecord record, MemorySegment src) throws IOException {
            if (!record.key().equals(fresh) || failedOnce.getAndSet(true)) {
                tier.write(record, src);
                return;
            }
            try {
                tier.write(record, src);
                throw new AssertionError("DRAM had room before the victim's slot was freed");
            } catch (TierFullException full) {
                finishRead.countDown();
                try {
                    // the free's thread deletes the slot, then counts it freed, then ends
                    if (!freeing.get(10, TimeUnit.SECONDS).join(Duration.ofSeconds(10))) {
                        throw new AssertionError("the victim's free never ended");
                    }
                } catch (InterruptedException | ExecutionException | TimeoutException e) {
                    throw new AssertionError("the victim's slot was never freed", e);
                }
                freedDuringFullWrite.set(!tier.contains(victim));
                throw full;
            }
        }

        @Override
        public boolean delete(BlockKey key) {
            if (key.equals(victim)) {
                freeing.complete(Thread.currentThread());
            }
            return tier.delete(key);
        }
    }

    /** How a test drops the copy of {@code victim} while a slow client reads it. */
    @FunctionalInterface
    private interface Drop {
        void drop(TierEngine engine, MemoryTier dram, BlockKey victim) throws Exception;
    }

    /**
     * DRAM full, every block but the victim pinned, a slow client reading the victim when {@code drop} removes
     * its copy: a store of a new block waits for the victim's slot instead of failing at once, and lands in
     * DRAM once the reader leaves.
     */
    private static void storeWaitsForTheSlotOfACopyDroppedWhileRead(Drop drop) throws Exception {
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = RaceFixtures.demotingEngine(List.of(dram), EngineEvents.NONE)) {
            BlockKey victim = TestBlocks.key("ns", 1);
            engine.put(victim, null, TestBlocks.bytes(arena, 1, BLOCK));
            List<BlockKey> pinned = new ArrayList<>();
            for (long id = 2; id <= 8; id++) {
                BlockKey key = TestBlocks.key("ns", id);
                engine.put(key, null, TestBlocks.bytes(arena, id, BLOCK));
                pinned.add(key);
            }
            assertThat(engine.pin(pinned)).isEqualTo(7);
            assertThat(dram.blockCount()).isEqualTo(8);
            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch finishRead = new CountDownLatch(1);
            CompletableFuture<TierId> read =
                    slowRead(engine, victim, reading, finishRead); // a client that stopped reading
            assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();
            drop.drop(engine, dram, victim);
            assertThat(engine.lookup("ns", List.of(victim.hash())).blocks()).isEmpty();
            assertThat(dram.blockCount())
                    .as("the victim's slot waits for its reader")
                    .isEqualTo(8);

            // meanwhile a client stores a new block: DRAM is full, but a slot is on its way, so the store waits
            RaceFixtures.assertStoreWaitsForTheSlotThenLands(engine, arena, BLOCK, 9, finishRead, read);
            assertThat(dram.blockCount()).isEqualTo(8);
        }
    }

    /**
     * A promotion holds the block as a reader while it copies it up; a delete that lands as the new copy is
     * recorded, on the promotion's own thread, does not wait for readers and leaves the freeing to the
     * last reader. The policy of the tier above must not keep the deleted copy: here it would be a child
     * that keeps its prefix from ever being a leaf.
     */
    @Test
    void aBlockDeletedAsItIsPromotedLeavesNoChildBehindItsPrefix() throws Exception {
        Hook hook = new Hook();
        MemoryTier hbm = new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 4L * BLOCK, BLOCK);
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = twoTiers(hbm, dram, true, hook)) {
            BlockKey prefix = TestBlocks.key("ns", 1);
            BlockKey suffix = TestBlocks.key("ns", 2);
            engine.put(prefix, null, TestBlocks.bytes(arena, 1, BLOCK));
            engine.put(suffix, prefix.hash(), TestBlocks.bytes(arena, 2, BLOCK), TierId.DRAM);
            hook.when(
                    TierId.HBM, suffix, () -> assertThat(engine.delete(suffix)).isTrue());

            engine.read(suffix, (tier, record, bytes) -> tier); // a hit in DRAM: promoted to HBM
            engine.awaitMoves();
            assertThat(hook.ran()).as("the delete landed inside the promotion").isTrue();
            awaitGone(engine, suffix, hbm, dram);

            assertThat(engine.evict(TierId.HBM, 0, 1).blocks()).isEqualTo(1);
            assertThat(Objects.requireNonNull(engine.info(prefix)).fastestTier())
                    .as("the prefix, HBM's only leaf, was moved down")
                    .isEqualTo(TierId.DRAM);
        }
    }

    /** As a promotion, a write-through holds the block as a reader while it copies it to the durable tier. */
    @Test
    void aBlockDeletedAsItIsWrittenThroughLeavesNoChildBehindItsPrefix() throws Exception {
        Hook hook = new Hook();
        MemoryTier hbm = new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 4L * BLOCK, BLOCK);
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = twoTiers(hbm, dram, false, hook)) {
            engine.setWriteThrough("ns", true);
            BlockKey prefix = TestBlocks.key("ns", 1);
            BlockKey suffix = TestBlocks.key("ns", 2);
            engine.put(prefix, null, TestBlocks.bytes(arena, 1, BLOCK), TierId.DRAM);
            hook.when(
                    TierId.DRAM, suffix, () -> assertThat(engine.delete(suffix)).isTrue());

            engine.put(suffix, prefix.hash(), TestBlocks.bytes(arena, 2, BLOCK)); // to HBM, then through to DRAM
            assertThat(hook.ran())
                    .as("the delete landed inside the write-through")
                    .isTrue();
            awaitGone(engine, suffix, hbm, dram);

            assertThat(engine.evict(TierId.DRAM, 0, 1).blocks()).isEqualTo(1);
            assertThat(engine.info(prefix))
                    .as("the prefix, DRAM's only leaf, was dropped")
                    .isNull();
        }
    }

    /**
     * A copy in HBM fails its checksum while a slow client still reads the block from there: its slot is freed
     * only when the block has no reader left. The hit in DRAM that follows schedules a promotion into HBM,
     * which holds the block as a reader: it must not wait for that slot (it would wait for itself, and stall
     * every other move for 30 s), and the block is promoted again by a later hit.
     */
    @Test
    void aPromotionOntoABadCopyWhoseFreeingAwaitsReadersDoesNotStallTheMover() throws Exception {
        MemoryTier hbm = new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 4L * BLOCK, BLOCK);
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = twoTiers(hbm, dram, true, EngineEvents.NONE)) {
            BlockKey key = TestBlocks.key("ns", 1);
            MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
            engine.put(key, null, bytes, TierId.DRAM);
            engine.read(key, (tier, record, view) -> tier); // a hit in DRAM: promoted to HBM
            engine.awaitMoves();
            assertThat(hbm.contains(key)).isTrue();

            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch finishRead = new CountDownLatch(1);
            CompletableFuture<TierId> slow = CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            return engine.read(key, (tier, record, view) -> {
                                reading.countDown();
                                try {
                                    finishRead.await(30, TimeUnit.SECONDS); // a client that stopped reading
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                                return tier;
                            });
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    },
                    task -> Thread.ofPlatform().daemon().start(task));
            assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();
            long offset = hbm.offsetOf(key);
            hbm.region().set(ValueLayout.JAVA_BYTE, offset, (byte) ~hbm.region().get(ValueLayout.JAVA_BYTE, offset));

            // fails its checksum in HBM, is served from DRAM, and that hit schedules a promotion into HBM
            MemorySegment out = arena.allocate(BLOCK);
            engine.get(key, out);
            assertThat(out.mismatch(bytes)).isEqualTo(-1);
            finishRead.countDown();
            assertThat(slow.get(10, TimeUnit.SECONDS)).isEqualTo(TierId.HBM);

            CompletableFuture<Void> moves = CompletableFuture.runAsync(engine::awaitMoves);
            assertThat(moves)
                    .as("the mover is not stuck behind the bad copy's freeing")
                    .succeedsWithin(Duration.ofSeconds(30));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (hbm.contains(key)
                    && !Objects.requireNonNull(engine.info(key)).tiers().contains(TierId.HBM)) {
                assertThat(System.nanoTime()).as("bad copy never freed").isLessThan(deadline);
                Thread.sleep(1);
            }
            engine.get(key, out); // a later hit promotes it again
            engine.awaitMoves();
            assertThat(Objects.requireNonNull(engine.info(key)).tiers()).contains(TierId.HBM);
            TierId servedBy = engine.read(key, (tier, record, view) -> view.mismatch(bytes) == -1 ? tier : null);
            assertThat(servedBy).as("a good copy served from HBM").isEqualTo(TierId.HBM);
        }
    }

    /**
     * The mover, promoting a block, finds its only copy corrupt while a slow client still reads that copy: it drops
     * the copy and goes on with the next block at once, instead of waiting for the client (up to 30 s, every other
     * promotion and demotion stalled behind it). The slot is freed when the client leaves, not before.
     */
    @Test
    void aMoverThatDropsABadCopyASlowClientReadsGoesOnWithTheNextBlock() throws Exception {
        MemoryTier hbm = new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 4L * BLOCK, BLOCK);
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * BLOCK, BLOCK);
        RaceFixtures.Recorder events = new RaceFixtures.Recorder(TierId.DRAM, TierId.HBM);
        CountDownLatch moverStopped = new CountDownLatch(1);
        CountDownLatch moverGoes = new CountDownLatch(1);
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch finishRead = new CountDownLatch(1);
        try (Arena arena = Arena.ofShared();
                TierEngine engine = twoTiers(hbm, dram, true, events)) {
            BlockKey first = TestBlocks.key("ns", 1);
            BlockKey bad = TestBlocks.key("ns", 2);
            BlockKey next = TestBlocks.key("ns", 3);
            for (BlockKey key : List.of(first, bad, next)) {
                engine.put(key, null, TestBlocks.bytes(arena, key.hash().asLong(), BLOCK), TierId.DRAM);
            }
            events.onMove(
                    () -> { // the mover stops inside the first promotion until the others are queued
                        moverStopped.countDown();
                        awaitQuietly(moverGoes);
                    });
            engine.read(first, (tier, record, view) -> tier);
            assertThat(moverStopped.await(10, TimeUnit.SECONDS)).isTrue();
            CompletableFuture<TierId> slow = slowRead(engine, bad, reading, finishRead);
            try {
                assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();
                engine.read(bad, (tier, record, view) -> tier); // queues its promotion
                long offset = dram.offsetOf(bad);
                dram.region().set(ValueLayout.JAVA_BYTE, offset, (byte)
                        ~dram.region().get(ValueLayout.JAVA_BYTE, offset));
                engine.read(next, (tier, record, view) -> tier); // queues its promotion behind the bad one's
                moverGoes.countDown();

                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!Objects.requireNonNull(engine.info(next)).tiers().contains(TierId.HBM)) {
                    assertThat(System.nanoTime())
                            .as("the next block promoted while the slow client still reads the bad one")
                            .isLessThan(deadline);
                    Thread.sleep(1);
                }
                assertThat(engine.lookup("ns", List.of(bad.hash())).blocks())
                        .as("the only copy, corrupt, was dropped")
                        .isEmpty();
                assertThat(dram.contains(bad))
                        .as("its slot is kept while the client reads it")
                        .isTrue();
            } finally {
                finishRead.countDown();
            }
            assertThat(slow.get(10, TimeUnit.SECONDS)).isEqualTo(TierId.DRAM);
            awaitGone(engine, bad, hbm, dram);
        }
    }

    /**
     * Reads {@code key} on a thread of its own as a client that stops reading: the read holds the block from
     * {@code reading} until {@code finish}, then returns the tier that served it.
     */
    private static CompletableFuture<TierId> slowRead(
            TierEngine engine, BlockKey key, CountDownLatch reading, CountDownLatch finish) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return engine.read(key, (tier, record, view) -> {
                            reading.countDown();
                            awaitQuietly(finish);
                            return tier;
                        });
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                },
                task -> Thread.ofPlatform().daemon().start(task));
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** HBM over DRAM, both prefix-aware and demoting only when asked; HBM promotes hits when told to. */
    private static TierEngine twoTiers(MemoryTier hbm, MemoryTier dram, boolean promote, EngineEvents events) {
        return new TierEngine(
                List.of(hbm, dram),
                Map.of(
                        TierId.HBM, new TierSettings(EvictionPolicyKind.PREFIX_AWARE, 1.0, 0.5, promote),
                        TierId.DRAM, new TierSettings(EvictionPolicyKind.PREFIX_AWARE, 1.0, 0.5, false)),
                Duration.ofMinutes(2),
                events,
                Clock.systemUTC());
    }

    /** Waits (10 s at most) until the last reader freed every slot of the deleted {@code key}. */
    private static void awaitGone(TierEngine engine, BlockKey key, BlockTier... tiers) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (engine.info(key) != null || Arrays.stream(tiers).anyMatch(t -> t.contains(key))) {
            assertThat(System.nanoTime()).as("slots never freed").isLessThan(deadline);
            Thread.sleep(1);
        }
    }

    /** Runs an action once, inside the recording of one copy (after it is published, before its policy hears). */
    private static final class Hook implements EngineEvents {
        private final AtomicReference<@Nullable String> copy = new AtomicReference<>();
        private final AtomicReference<@Nullable Runnable> action = new AtomicReference<>();
        private final AtomicBoolean ran = new AtomicBoolean();

        void when(TierId tier, BlockKey key, Runnable run) {
            copy.set(tier + " " + key);
            action.set(run);
        }

        boolean ran() {
            return ran.get();
        }

        @Override
        public void copyAdded(TierId tier, BlockRecord block) {
            if ((tier + " " + block.key()).equals(copy.get())) {
                Runnable run = action.getAndSet(null);
                if (run != null) {
                    run.run();
                    ran.set(true);
                }
            }
        }
    }
}
