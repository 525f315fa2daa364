package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One-sided writes: slots reserved in a memory tier, written in place (here by the test, standing in for
 * a peer's RMA WRITE into the registered region), then committed.
 */
class TierEngineInPlaceWriteTest {

    private static final int BLOCK = 16 * 1024;

    private final Arena arena = Arena.ofShared();
    private MemoryTier dram;
    private TierEngine engine;

    private TierEngine engine(int blocks, Duration leaseTimeout) {
        return engine(blocks, leaseTimeout, EngineEvents.NONE);
    }

    private TierEngine engine(int blocks, Duration leaseTimeout, EngineEvents events) {
        dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), (long) blocks * BLOCK, BLOCK);
        engine = new TierEngine(
                List.of(dram),
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)),
                leaseTimeout,
                events,
                Clock.systemUTC());
        return engine;
    }

    @AfterEach
    void close() {
        if (engine != null) {
            engine.close();
        }
        arena.close();
    }

    private static List<InPlaceBlock> chain(int from, int count) {
        List<InPlaceBlock> blocks = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            blocks.add(new InPlaceBlock(TestBlocks.key("ns", i), i == 0 ? null : BlockHash.ofLong(i - 1), BLOCK));
        }
        return blocks;
    }

    /** What a peer does: WRITE each block's bytes into its slot; returns the CRC32C of each as it would send. */
    private Map<BlockKey, Integer> writeSlots(Reservation r) {
        Map<BlockKey, Integer> crcs = new HashMap<>();
        for (Reservation.Slot slot : r.slots()) {
            long id = slot.block().key().hash().hex().hashCode();
            MemorySegment bytes = TestBlocks.bytes(arena, id, BLOCK);
            MemorySegment.copy(bytes, 0, dram.region(), slot.offset(), BLOCK);
            crcs.put(slot.block().key(), Checksums.crc32c(bytes));
        }
        return crcs;
    }

    private static List<BlockHash> hashes(int count) {
        List<BlockHash> hashes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            hashes.add(BlockHash.ofLong(i));
        }
        return hashes;
    }

    @Test
    void reservedSlotsStayInvisibleUntilCommittedThenReadBackExact() throws Exception {
        engine(16, Duration.ofSeconds(30));
        Reservation r = engine.reserve(chain(0, 4), TierId.DRAM, null);
        assertThat(r.slots()).hasSize(4);
        assertThat(r.slots()).extracting(Reservation.Slot::offset).doesNotHaveDuplicates();
        assertThat(dram.usedBytes()).isEqualTo(4L * BLOCK);
        Map<BlockKey, Integer> crcs = writeSlots(r);
        assertThat(engine.lookup("ns", hashes(4)).matchedBlocks()).isZero();

        CommitReport report = engine.commit(r.id(), crcs);

        assertThat(report.committed()).hasSize(4);
        assertThat(report.failed()).isEmpty();
        assertThat(engine.lookup("ns", hashes(4)).matchedBlocks()).isEqualTo(4);
        MemorySegment dst = arena.allocate(BLOCK);
        for (Reservation.Slot slot : r.slots()) {
            engine.get(slot.block().key(), dst);
            assertThat(Checksums.crc32c(dst)).isEqualTo(crcs.get(slot.block().key()));
            assertThat(dram.offsetOf(slot.block().key())).isEqualTo(slot.offset());
        }
        assertThat(dram.usedBytes()).isEqualTo(4L * BLOCK);
        assertThatThrownBy(() -> engine.commit(r.id(), Map.of())).isInstanceOf(UnknownReservationException.class);
    }

    @Test
    void aSlotWhoseBytesDoNotMatchTheWritersChecksumIsRefusedAndFreed() throws Exception {
        engine(16, Duration.ofSeconds(30));
        Reservation r = engine.reserve(chain(0, 2), TierId.DRAM, null);
        Map<BlockKey, Integer> crcs = writeSlots(r);
        BlockKey torn = r.slots().get(1).block().key();
        crcs.put(torn, crcs.get(torn) ^ 1);

        CommitReport report = engine.commit(r.id(), crcs);

        assertThat(report.committed()).containsExactly(r.slots().get(0).block().key());
        assertThat(report.failed()).containsOnlyKeys(torn);
        assertThat(report.failed().get(torn)).contains("did not land whole");
        assertThat(engine.info(torn)).isNull();
        assertThat(dram.usedBytes()).isEqualTo(BLOCK);
    }

    @Test
    void aTornBlockInALargeBatchIsRefusedAndTheRestCommitExact() throws Exception {
        // 6 x 1 MiB: past the size from which a commit checksums its slots on several cores
        int big = 1 << 20;
        MemoryTier tier = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 8L * big, big);
        try (TierEngine bigEngine = new TierEngine(
                List.of(tier),
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)),
                Duration.ofSeconds(30),
                EngineEvents.NONE,
                Clock.systemUTC())) {
            List<InPlaceBlock> blocks = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                blocks.add(new InPlaceBlock(TestBlocks.key("big", i), i == 0 ? null : BlockHash.ofLong(i - 1), big));
            }
            Reservation r = bigEngine.reserve(blocks, TierId.DRAM, null);
            Map<BlockKey, Integer> crcs = new HashMap<>();
            for (Reservation.Slot slot : r.slots()) {
                MemorySegment bytes =
                        TestBlocks.bytes(arena, slot.block().key().hash().hex().hashCode(), big);
                MemorySegment.copy(bytes, 0, tier.region(), slot.offset(), big);
                crcs.put(slot.block().key(), Checksums.crc32c(bytes));
            }
            Reservation.Slot tornSlot = r.slots().get(3);
            tier.region()
                    .asSlice(tornSlot.offset() + big - 4096, 4096)
                    .fill((byte) 0); // the WRITE's last page never landed

            CommitReport report = bigEngine.commit(r.id(), crcs);

            BlockKey torn = tornSlot.block().key();
            assertThat(report.failed()).containsOnlyKeys(torn);
            assertThat(report.committed()).hasSize(5).doesNotContain(torn);
            assertThat(bigEngine.info(torn)).isNull();
            MemorySegment dst = arena.allocate(big);
            for (BlockKey key : report.committed()) {
                bigEngine.get(key, dst);
                assertThat(Checksums.crc32c(dst)).isEqualTo(crcs.get(key));
            }
            assertThat(tier.usedBytes()).isEqualTo(5L * big);
        }
    }

    @Test
    void blocksAlreadyStoredGetNoSlot() throws Exception {
        engine(16, Duration.ofSeconds(30));
        engine.put(TestBlocks.key("ns", 0), null, TestBlocks.bytes(arena, 0, BLOCK));
        Reservation r = engine.reserve(chain(0, 3), TierId.DRAM, null);
        assertThat(r.alreadyStored()).containsExactly(TestBlocks.key("ns", 0));
        assertThat(r.slots()).hasSize(2);
        CommitReport report = engine.commit(r.id(), writeSlots(r));
        assertThat(report.committed()).hasSize(2);
        assertThat(report.alreadyStored()).containsExactly(TestBlocks.key("ns", 0));
        assertThat(engine.lookup("ns", hashes(3)).matchedBlocks()).isEqualTo(3);
    }

    @Test
    void uncommittedReservationsExpireAndReturnTheirSlots() throws Exception {
        engine(16, Duration.ofMillis(100));
        Reservation r = engine.reserve(chain(0, 5), TierId.DRAM, Duration.ofMillis(100));
        assertThat(dram.usedBytes()).isEqualTo(5L * BLOCK);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (engine.activeReservations() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(engine.activeReservations()).isZero();
        assertThat(dram.usedBytes()).isZero();
        assertThatThrownBy(() -> engine.commit(r.id(), Map.of()))
                .isInstanceOf(UnknownReservationException.class)
                .hasMessageContaining("expired");
    }

    @Test
    void everyReservationThatExpiresUncommittedIsReportedOnceFencedOrNot() throws Exception {
        AtomicInteger expired = new AtomicInteger();
        engine(16, Duration.ofMillis(50), new EngineEvents() {
            @Override
            public void reservationsExpired(int count) {
                expired.addAndGet(count);
            }
        });
        AtomicReference<WriterState> writer = new AtomicReference<>(WriterState.FENCED);
        Reservation committed = engine.reserve(chain(0, 2), TierId.DRAM, Duration.ofMinutes(1));
        engine.commit(committed.id(), writeSlots(committed));
        Reservation cancelled = engine.reserve(chain(2, 2), TierId.DRAM, Duration.ofMinutes(1));
        assertThat(engine.cancel(cancelled.id())).isTrue();
        engine.reserve(chain(4, 3), TierId.DRAM, Duration.ofMillis(50)); // slots go back at its expiry
        engine.reserve(chain(7, 1), TierId.DRAM, Duration.ofMillis(50), writer::get); // fenced at its expiry
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (expired.get() < 2 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(expired).as("two reservations expired, one of them fenced").hasValue(2);
        assertThat(engine.activeReservations()).isZero();
        assertThat(engine.fencedReservations()).isEqualTo(1);

        // its writer's client goes: the fenced slots go back, but that reservation expired already
        writer.set(WriterState.GONE);
        deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (engine.fencedReservations() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(engine.fencedReservations()).isZero();
        assertThat(expired).hasValue(2);
    }

    @Test
    void anExpiredReservationWhoseWriterMayStillWriteKeepsItsSlotsFromEveryoneElseUntilItCannot() throws Exception {
        engine(2, Duration.ofMillis(50));
        AtomicReference<WriterState> writer = new AtomicReference<>(WriterState.FENCED);
        Reservation stalled = engine.reserve(chain(0, 2), TierId.DRAM, Duration.ofMillis(50), writer::get);
        awaitNoActiveReservations();

        // past its time: the commit is refused as before, but the slots are not anyone else's yet
        assertThat(engine.fencedReservations()).isEqualTo(1);
        assertThat(engine.holdsReservation(stalled.id())).isTrue();
        assertThat(dram.usedBytes()).isEqualTo(2L * BLOCK);
        assertThatThrownBy(() -> engine.reserve(chain(10, 1), TierId.DRAM, null))
                .isInstanceOf(TierFullException.class);

        // the writer's client goes away: the next sweep frees the slots
        writer.set(WriterState.GONE);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (engine.fencedReservations() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(engine.fencedReservations()).isZero();
        assertThat(engine.holdsReservation(stalled.id())).isFalse();
        assertThat(dram.usedBytes()).isZero();
        assertThat(engine.reserve(chain(10, 2), TierId.DRAM, null).slots()).hasSize(2);
    }

    @Test
    void aFenceLiftedWhileItsWriterMayStillWriteFreesTheSlotsButTheirNextWriterMustSendChecksums() throws Exception {
        engine(2, Duration.ofMillis(50));
        AtomicReference<WriterState> writer = new AtomicReference<>(WriterState.FENCED);
        Reservation stalled = engine.reserve(chain(0, 1), TierId.DRAM, Duration.ofMillis(50), writer::get);
        long left = stalled.slots().get(0).offset();
        awaitNoActiveReservations();
        assertThat(engine.fencedReservations()).isEqualTo(1);

        // the connection it was granted on closed unnamed (or its token was revoked): no fence, not gone
        writer.set(WriterState.UNWATCHED);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (engine.holdsReservation(stalled.id()) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(engine.holdsReservation(stalled.id())).isFalse();
        assertThat(dram.usedBytes()).isZero();

        Reservation next = engine.reserve(chain(10, 2), TierId.DRAM, null, () -> WriterState.FENCED);
        assertThat(next.slots()).extracting(Reservation.Slot::offset).contains(left);
        assertThat(next.writerChecksums())
                .as("the lifted fence's writer may still land bytes in that slot")
                .isTrue();
    }

    @Test
    void aWriterNotWatchedWhenItsReservationExpiresLeavesItsSlotsRememberedAsUnfenced() throws Exception {
        engine(2, Duration.ofMillis(50));
        Reservation unwatched =
                engine.reserve(chain(0, 1), TierId.DRAM, Duration.ofMillis(50), () -> WriterState.UNWATCHED);
        Reservation gone = engine.reserve(chain(5, 1), TierId.DRAM, Duration.ofMillis(50), () -> WriterState.GONE);
        awaitNoActiveReservations();
        assertThat(engine.fencedReservations()).isZero();
        assertThat(dram.usedBytes()).isZero();

        Reservation next = engine.reserve(chain(10, 1), TierId.DRAM, null, () -> WriterState.FENCED);
        Reservation after = engine.reserve(chain(20, 1), TierId.DRAM, null, () -> WriterState.FENCED);
        Reservation atUnwatched =
                next.slots().get(0).offset() == unwatched.slots().get(0).offset() ? next : after;
        Reservation atGone = atUnwatched == next ? after : next;
        assertThat(atUnwatched.slots().get(0).offset())
                .isEqualTo(unwatched.slots().get(0).offset());
        assertThat(atGone.slots().get(0).offset()).isEqualTo(gone.slots().get(0).offset());
        assertThat(atUnwatched.writerChecksums()).isTrue();
        assertThat(atGone.writerChecksums())
                .as("a writer that is gone writes no more")
                .isFalse();
    }

    @Test
    void aWriterThatNamesItsExpiredReservationAfterItsCopiesFreesTheFencedSlotsAtOnce() throws Exception {
        engine(2, Duration.ofMillis(50));
        Reservation late = engine.reserve(chain(0, 1), TierId.DRAM, Duration.ofMillis(50), () -> WriterState.FENCED);
        Reservation cancelled =
                engine.reserve(chain(5, 1), TierId.DRAM, Duration.ofMillis(50), () -> WriterState.FENCED);
        awaitNoActiveReservations();
        assertThat(engine.fencedReservations()).isEqualTo(2);
        Map<BlockKey, Integer> crcs = writeSlots(late);

        assertThatThrownBy(() -> engine.commit(late.id(), crcs)).isInstanceOf(UnknownReservationException.class);
        assertThat(engine.cancel(cancelled.id())).isFalse();

        assertThat(engine.fencedReservations()).isZero();
        assertThat(dram.usedBytes()).isZero();
        assertThat(engine.lookup("ns", hashes(1)).matchedBlocks()).isZero();
    }

    @Test
    void aFencedWriterGivenASlotWhereAnUnfencedReservationExpiredIsToldToSendItsChecksums() throws Exception {
        engine(4, Duration.ofMillis(50));
        Reservation unfenced = engine.reserve(chain(0, 1), TierId.DRAM, Duration.ofMillis(50));
        assertThat(unfenced.writerChecksums()).as("no fence: always").isTrue();
        long left = unfenced.slots().get(0).offset();
        Reservation clean = engine.reserve(chain(5, 1), TierId.DRAM, null, () -> WriterState.FENCED);
        assertThat(clean.writerChecksums()).isFalse();
        awaitExpired(unfenced);

        Reservation fenced = engine.reserve(chain(10, 3), TierId.DRAM, null, () -> WriterState.FENCED);

        assertThat(fenced.slots()).extracting(Reservation.Slot::offset).contains(left);
        assertThat(fenced.writerChecksums())
                .as("its writer may still land bytes in that slot at any time")
                .isTrue();
    }

    @Test
    void aRememberedSlotIsForgottenOnlyOnceEveryWriterThatLeftItIsGone() throws Exception {
        engine(1, Duration.ofMillis(50)); // one slot: every reservation below gets it
        AtomicReference<WriterState> first = new AtomicReference<>(WriterState.UNWATCHED);
        AtomicReference<WriterState> second = new AtomicReference<>(WriterState.UNWATCHED);
        Reservation a = engine.reserve(chain(0, 1), TierId.DRAM, Duration.ofMillis(50), first::get);
        awaitExpired(a);
        Reservation b = engine.reserve(chain(0, 1), TierId.DRAM, Duration.ofMillis(50), second::get);
        assertThat(b.slots().get(0).offset()).isEqualTo(a.slots().get(0).offset());
        assertThat(b.writerChecksums()).isTrue();
        awaitExpired(b);

        // the first writer's client closed every connection; the second may still land a late copy there
        first.set(WriterState.GONE);
        Thread.sleep(300); // several sweeps
        assertThat(nextWriterSendsChecksums())
                .as("the second writer left the slot too and is not gone")
                .isTrue();

        second.set(WriterState.GONE);
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        boolean asked = true;
        while (asked && System.nanoTime() < deadline) {
            Thread.sleep(20);
            asked = nextWriterSendsChecksums();
        }
        assertThat(asked)
                .as("every writer that left the slot is gone: its next writer sends no CRC32Cs")
                .isFalse();
    }

    @Test
    void aSlotLeftByAWriterNoOneWatchesStaysRememberedWhenAnotherWriterThatLeftItIsGone() throws Exception {
        engine(1, Duration.ofMillis(50));
        Reservation http = engine.reserve(chain(0, 1), TierId.DRAM, Duration.ofMillis(50)); // no writer to ask
        awaitExpired(http);
        AtomicReference<WriterState> socket = new AtomicReference<>(WriterState.UNWATCHED);
        Reservation b = engine.reserve(chain(0, 1), TierId.DRAM, Duration.ofMillis(50), socket::get);
        awaitExpired(b);

        socket.set(WriterState.GONE);
        Thread.sleep(300); // several sweeps

        assertThat(nextWriterSendsChecksums())
                .as("the writer without a client to watch may still write there")
                .isTrue();
    }

    /** Whether a fenced writer given the (only) slot now is asked for its CRC32Cs; the slot is given back. */
    private boolean nextWriterSendsChecksums() throws Exception {
        Reservation r = engine.reserve(chain(0, 1), TierId.DRAM, null, () -> WriterState.FENCED);
        assertThat(engine.cancel(r.id())).isTrue();
        return r.writerChecksums();
    }

    private void awaitExpired(Reservation r) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (engine.holdsReservation(r.id()) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(engine.holdsReservation(r.id())).isFalse();
    }

    private void awaitNoActiveReservations() throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (engine.activeReservations() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(engine.activeReservations()).isZero();
    }

    @Test
    void aWriteThatLandsAfterItsReservationExpiredIsNeverServed() throws Exception {
        engine(1, Duration.ofSeconds(30));
        Reservation r = engine.reserve(chain(0, 1), TierId.DRAM, null);
        long slot = r.slots().get(0).offset();
        assertThat(engine.cancel(r.id())).isTrue();
        BlockKey other = TestBlocks.key("other", 7);
        engine.put(other, null, TestBlocks.bytes(arena, 7, BLOCK));
        assertThat(dram.offsetOf(other)).isEqualTo(slot);
        // the late peer's WRITE lands in the slot another block now holds
        MemorySegment.copy(TestBlocks.bytes(arena, 99, BLOCK), 0, dram.region(), slot, BLOCK);

        assertThatThrownBy(() -> engine.get(other, arena.allocate(BLOCK)))
                .isInstanceOf(ChecksumMismatchException.class);
        assertThat(engine.info(other)).isNull();
    }

    @Test
    void reservingEvictsByPolicyAndKeepsNothingWhenNoRoomCanBeMade() throws Exception {
        engine(4, Duration.ofSeconds(30));
        for (int i = 100; i < 104; i++) {
            engine.put(TestBlocks.key("old", i), null, TestBlocks.bytes(arena, i, BLOCK));
        }
        Reservation r = engine.reserve(chain(0, 2), TierId.DRAM, null);
        assertThat(r.slots()).hasSize(2);
        assertThat(engine.blockCount()).isEqualTo(2);
        engine.pin(List.of(TestBlocks.key("old", 102), TestBlocks.key("old", 103)));

        assertThatThrownBy(() -> engine.reserve(chain(10, 1), TierId.DRAM, null))
                .isInstanceOf(TierFullException.class);
        assertThat(dram.usedBytes()).isEqualTo(4L * BLOCK);
        assertThatThrownBy(() ->
                        engine.reserve(List.of(chain(0, 1).get(0), chain(0, 1).get(0)), TierId.DRAM, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("twice");
    }

    @Test
    void aPutIntoAFullTierWaitsForAReaderToLetGoInsteadOfFailing() throws Exception {
        writeWaitsForTheReaderOfTheLastEvictableBlock(() -> {
            assertThat(engine.put(TestBlocks.key("new", 1), null, TestBlocks.bytes(arena, 1, BLOCK)))
                    .isEqualTo(TierId.DRAM);
            MemorySegment dst = arena.allocate(BLOCK);
            engine.get(TestBlocks.key("new", 1), dst);
            assertThat(dst.mismatch(TestBlocks.bytes(arena, 1, BLOCK))).isEqualTo(-1);
            return null;
        });
    }

    @Test
    void aReservationInAFullTierWaitsForAReaderToLetGoInsteadOfFailing() throws Exception {
        writeWaitsForTheReaderOfTheLastEvictableBlock(() -> {
            Reservation r = engine.reserve(chain(20, 1), TierId.DRAM, null);
            assertThat(r.slots()).hasSize(1);
            return null;
        });
    }

    /**
     * Fills a four-slot tier, pins three blocks and holds a reader on the fourth; {@code write} must then
     * wait (not fail with a full tier) and succeed once the reader lets go, evicting that block.
     */
    private void writeWaitsForTheReaderOfTheLastEvictableBlock(java.util.concurrent.Callable<Void> write)
            throws Exception {
        engine(4, Duration.ofSeconds(30));
        for (int i = 100; i < 104; i++) {
            engine.put(TestBlocks.key("old", i), null, TestBlocks.bytes(arena, i, BLOCK));
        }
        engine.pin(List.of(TestBlocks.key("old", 100), TestBlocks.key("old", 101), TestBlocks.key("old", 102)));
        var reading = new java.util.concurrent.CountDownLatch(1);
        var letGo = new java.util.concurrent.CountDownLatch(1);
        try (var pool = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
            var reader = pool.submit(() -> engine.read(TestBlocks.key("old", 103), (tier, record, bytes) -> {
                reading.countDown();
                try {
                    letGo.await();
                } catch (InterruptedException e) {
                    throw new java.io.InterruptedIOException();
                }
                return record.length();
            }));
            reading.await();
            var writer = pool.submit(write);
            Thread.sleep(200);
            assertThat(writer)
                    .as("the write waits while a reader holds the last evictable slot")
                    .isNotDone();
            letGo.countDown();
            assertThat(reader.get()).isEqualTo(BLOCK);
            writer.get();
        }
        assertThat(engine.info(TestBlocks.key("old", 103)))
                .as("the block whose reader let go was evicted")
                .isNull();
        assertThat(dram.usedBytes()).isEqualTo(4L * BLOCK);
    }

    @Test
    void putInPlaceFillsAFreeSlotAndPublishesItLikeAPut() throws Exception {
        engine(8, Duration.ofSeconds(30));
        MemorySegment scratch = arena.allocate(BLOCK);
        MemorySegment bytes = TestBlocks.bytes(arena, 5, BLOCK);
        BlockKey key = TestBlocks.key("ns", 5);
        assertThat(engine.putInPlace(key, null, BLOCK, slot -> MemorySegment.copy(bytes, 0, slot, 0, BLOCK), scratch))
                .isEqualTo(TierId.DRAM);
        assertThat(scratch.mismatch(bytes))
                .as("the scratch buffer is not used for a new block")
                .isNotEqualTo(-1);
        MemorySegment dst = arena.allocate(BLOCK);
        engine.get(key, dst);
        assertThat(dst.mismatch(bytes)).isEqualTo(-1);
        assertThat(engine.info(key).crc32c()).isEqualTo(Checksums.crc32c(bytes));

        // again with the same bytes: a no-op; with other bytes: refused, nothing changes
        assertThat(engine.putInPlace(key, null, BLOCK, slot -> MemorySegment.copy(bytes, 0, slot, 0, BLOCK), scratch))
                .isEqualTo(TierId.DRAM);
        MemorySegment other = TestBlocks.bytes(arena, 6, BLOCK);
        assertThatThrownBy(() -> engine.putInPlace(
                        key, null, BLOCK, slot -> MemorySegment.copy(other, 0, slot, 0, BLOCK), scratch))
                .isInstanceOf(BlockConflictException.class)
                .hasMessageContaining("different bytes");
        assertThat(dram.usedBytes()).isEqualTo(BLOCK);
        engine.get(key, dst);
        assertThat(dst.mismatch(bytes)).isEqualTo(-1);
    }

    @Test
    void aStoreFilledInPlaceIntoASlotAnUnfencedReservationLeftNeverServesTheLateWritersBytes() throws Exception {
        engine(1, Duration.ofMillis(50));
        Reservation unfenced = engine.reserve(chain(0, 1), TierId.DRAM, Duration.ofMillis(50));
        long left = unfenced.slots().get(0).offset();
        awaitExpired(unfenced);
        MemorySegment bytes = TestBlocks.bytes(arena, 5, BLOCK);
        BlockKey key = TestBlocks.key("other", 5);

        engine.putInPlace(
                key,
                null,
                BLOCK,
                slot -> {
                    MemorySegment.copy(bytes, 0, slot, 0, BLOCK);
                    // the stalled writer of the expired reservation lands its copy after this fill
                    MemorySegment.copy(TestBlocks.bytes(arena, 99, BLOCK), 0, dram.region(), left, BLOCK);
                },
                arena.allocate(BLOCK));

        MemorySegment dst = arena.allocate(BLOCK);
        try {
            engine.get(key, dst);
            assertThat(dst.mismatch(bytes)).as("the block's own bytes, or none").isEqualTo(-1);
        } catch (ChecksumMismatchException dropped) {
            assertThat(engine.info(key)).isNull();
        }
    }

    @Test
    void aFillThatFailsReturnsItsSlotAndStoresNothing() throws Exception {
        engine(8, Duration.ofSeconds(30));
        BlockKey key = TestBlocks.key("ns", 9);
        assertThatThrownBy(() -> engine.putInPlace(
                        key,
                        null,
                        BLOCK,
                        slot -> {
                            throw new java.io.IOException("the client went away");
                        },
                        arena.allocate(BLOCK)))
                .hasMessage("the client went away");
        assertThat(dram.usedBytes()).isZero();
        assertThat(engine.info(key)).isNull();
    }
}
