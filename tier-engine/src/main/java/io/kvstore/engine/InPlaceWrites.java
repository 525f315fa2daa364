package io.kvstore.engine;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.catalog.Catalog;
import io.kvstore.catalog.CatalogEntry;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.memory.MemoryTier;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;

/**
 * Blocks whose bytes are written straight into a memory tier's slot instead of copied in by a put: by a
 * peer one-sided (reserve, WRITE, commit) or by the service from a socket ({@link #putInPlace}). A filled
 * slot is checksummed in place and then published through the same protocol as a put, so nothing here
 * can make unverified bytes visible.
 */
final class InPlaceWrites {

    /** From this many bytes in one commit its checksums run on several cores. */
    private static final long PARALLEL_CHECKSUM_BYTES = 1L << 20;

    private final TierStack stack;
    private final Catalog catalog;
    private final Residency residency;
    private final Mover mover;
    private final Clock clock;
    private final Duration defaultTimeout;
    private final Map<String, Reservation> reservations = new ConcurrentHashMap<>();
    /** For reservations made with one: whether their writer may still be writing (see {@link #expire}). */
    private final Map<String, Supplier<WriterState>> writers = new ConcurrentHashMap<>();
    /** Reservations past their time whose writer may still write: their slots stay out of use until it cannot. */
    private final Map<String, Reservation> fenced = new ConcurrentHashMap<>();
    /**
     * The slots whose unfenced reservation expired, with who left them: their writer may still land bytes there
     * at any time, so a fenced writer given a slot that overlaps one must still send its CRC32Cs. A socket
     * client's are forgotten once it is gone; those of a writer no one watches stay for the service's life.
     */
    private final UnfencedSlots unfencedExpiries = new UnfencedSlots();

    InPlaceWrites(
            TierStack stack, Catalog catalog, Residency residency, Mover mover, Clock clock, Duration defaultTimeout) {
        this.stack = stack;
        this.catalog = catalog;
        this.residency = residency;
        this.mover = mover;
        this.clock = clock;
        this.defaultTimeout = defaultTimeout;
    }

    /** See {@link TierEngine#reserve(List, TierId, Duration, Supplier)}. */
    Reservation reserve(
            List<InPlaceBlock> blocks,
            TierId target,
            @Nullable Duration timeout,
            @Nullable Supplier<WriterState> writer)
            throws IOException {
        MemoryTier memory = stack.memory(target);
        Set<BlockKey> seen = new HashSet<>();
        for (InPlaceBlock b : blocks) {
            if (!seen.add(b.key())) {
                throw new IllegalArgumentException("block " + b.key() + " is listed twice in one reservation");
            }
        }
        List<Reservation.Slot> slots = new ArrayList<>();
        List<BlockKey> resident = new ArrayList<>();
        try {
            for (InPlaceBlock b : blocks) {
                CatalogEntry entry = catalog.get(b.key());
                TierId holder = entry == null ? null : entry.fastestTier();
                if (entry != null && holder != null) {
                    // reported as stored, so it must be where a write-through namespace asks (its first
                    // write-through may have failed)
                    mover.writeThroughIfAsked(new Residency.Stored(holder, false, entry));
                    resident.add(b.key());
                } else {
                    slots.add(new Reservation.Slot(b, reserveWithRoom(memory, b.length())));
                }
            }
        } catch (IOException | RuntimeException e) {
            releaseSlots(memory, slots);
            throw e;
        }
        Reservation r = new Reservation(
                UUID.randomUUID().toString(),
                target,
                slots,
                resident,
                clock.instant().plus(timeout == null ? defaultTimeout : timeout),
                writer == null || slots.stream().anyMatch(slot -> leftByUnfencedExpiry(target, slot)));
        if (writer != null) {
            writers.put(r.id(), writer);
        }
        reservations.put(r.id(), r);
        return r;
    }

    private long reserveWithRoom(MemoryTier memory, int length) throws IOException {
        return mover.reserveWithRoom(memory, length);
    }

    /** See {@link TierEngine#commit}. */
    CommitReport commit(String reservationId, Map<BlockKey, Integer> expectedCrc32c) {
        Reservation r = reservations.remove(reservationId);
        if (r == null) {
            releaseFenced(reservationId); // its writer is done with the slots: it commits after its copies
            throw new UnknownReservationException(reservationId);
        }
        writers.remove(reservationId);
        MemoryTier memory = stack.memory(r.tier());
        List<BlockKey> committed = new ArrayList<>();
        List<BlockKey> already = new ArrayList<>(r.alreadyStored());
        Map<BlockKey, String> failed = new LinkedHashMap<>();
        int[] crcs = checksumSlots(memory, r.slots());
        for (int i = 0; i < r.slots().size(); i++) {
            Reservation.Slot slot = r.slots().get(i);
            InPlaceBlock b = slot.block();
            int crc = crcs[i];
            Integer expected = expectedCrc32c.get(b.key());
            if (expected != null && expected != crc) {
                memory.releaseSlot(slot.offset(), b.length());
                failed.put(
                        b.key(),
                        String.format(
                                "its bytes have CRC32C %08x, not the %08x the writer sent: the WRITE did not land whole",
                                crc, expected));
                continue;
            }
            try {
                if (publishSlot(memory, b, slot.offset(), crc).copied()) {
                    committed.add(b.key());
                } else {
                    already.add(b.key());
                }
            } catch (IOException | RuntimeException e) {
                failed.put(b.key(), e.getMessage());
            }
        }
        return new CommitReport(committed, already, failed);
    }

    /**
     * The CRC32C of every reserved slot. That one pass over the bytes is the whole cost of a commit (about
     * 4 GB/s per core here), so batches of large blocks are checksummed on several cores at once; small
     * batches stay on the caller's thread.
     */
    private static int[] checksumSlots(MemoryTier memory, List<Reservation.Slot> slots) {
        int[] crcs = new int[slots.size()];
        long bytes = 0;
        for (Reservation.Slot slot : slots) {
            bytes += slot.block().length();
        }
        IntStream indexes = IntStream.range(0, slots.size());
        if (slots.size() > 1 && bytes >= PARALLEL_CHECKSUM_BYTES) {
            indexes = indexes.parallel();
        }
        indexes.forEach(i -> crcs[i] = Checksums.crc32c(
                memory.slot(slots.get(i).offset(), slots.get(i).block().length())));
        return crcs;
    }

    /**
     * Makes a reserved, filled slot the block's copy through the same path as a put. The slot is freed
     * here whenever it does not become the copy (already stored by someone else, or a failure).
     */
    private Residency.Stored publishSlot(MemoryTier memory, InPlaceBlock b, long offset, int crc) throws IOException {
        boolean[] adopted = {false};
        Residency.Stored stored;
        try {
            stored = residency.store(b.key(), b.parent(), b.length(), crc, memory, (entry, record) -> {
                if (adopted[0]) {
                    throw new IllegalStateException("block " + b.key() + " was deleted while it was being committed");
                }
                Residency.awaitOldCopyFreed(memory, entry);
                if (!memory.adopt(record, offset)) {
                    throw new IllegalStateException("tier " + memory.id() + " already holds a copy of " + b.key());
                }
                adopted[0] = true;
            });
        } catch (IOException | RuntimeException e) {
            if (!adopted[0]) {
                memory.releaseSlot(offset, b.length());
            }
            throw e;
        }
        if (stored.copied()) {
            mover.afterStore(stored);
        } else {
            if (!adopted[0]) {
                // once adopted, the slot was the tier's: a delete that won the race freed it with the copy
                memory.releaseSlot(offset, b.length());
            }
            mover.writeThroughIfAsked(stored);
        }
        return stored;
    }

    /** Whether {@link #putInPlace} can fill a slot for {@code key}: the fastest tier is memory and the key is new. */
    boolean canFillSlot(BlockKey key) {
        CatalogEntry existing = catalog.get(key);
        return stack.get(stack.fastest()) instanceof MemoryTier && (existing == null || !existing.resident());
    }

    /**
     * See {@link TierEngine#putInPlace}; the caller checked {@link #canFillSlot}. Null, with nothing filled, when
     * the free slot lies where an unfenced reservation expired: its writer may land bytes there between the fill
     * and the checksum taken of the slot, so the caller copies the block in as a put (checksum of the source).
     */
    @Nullable
    TierId putInPlace(BlockKey key, @Nullable BlockHash parent, int length, TierEngine.SlotFiller filler)
            throws IOException {
        MemoryTier memory = stack.memory(stack.fastest());
        long offset = reserveWithRoom(memory, length);
        if (leftByUnfencedExpiry(memory.id(), offset, length)) {
            memory.releaseSlot(offset, length);
            return null;
        }
        try {
            filler.fill(memory.slot(offset, length));
        } catch (IOException | RuntimeException e) {
            memory.releaseSlot(offset, length);
            throw e;
        }
        int crc = Checksums.crc32c(memory.slot(offset, length));
        return publishSlot(memory, new InPlaceBlock(key, parent, length), offset, crc)
                .tier();
    }

    /** Returns an uncommitted reservation's slots to the pool; false when it is unknown. */
    boolean cancel(String reservationId) {
        Reservation r = reservations.remove(reservationId);
        if (r == null) {
            releaseFenced(reservationId); // past its time already; its writer has stopped writing
            return false;
        }
        writers.remove(reservationId);
        releaseSlots(stack.memory(r.tier()), r.slots());
        return true;
    }

    private boolean leftByUnfencedExpiry(TierId tier, Reservation.Slot slot) {
        return leftByUnfencedExpiry(tier, slot.offset(), slot.block().length());
    }

    private boolean leftByUnfencedExpiry(TierId tier, long offset, int length) {
        return unfencedExpiries.overlaps(tier, offset, length);
    }

    private void releaseFenced(String reservationId) {
        Reservation r = fenced.remove(reservationId);
        if (r != null) {
            writers.remove(reservationId);
            releaseSlots(stack.memory(r.tier()), r.slots());
        }
    }

    /** Whether the reservation still holds its slots: open, or past its time and fenced. */
    boolean holds(String reservationId) {
        return reservations.containsKey(reservationId) || fenced.containsKey(reservationId);
    }

    /** Reservations past their time whose slots stay fenced off from a writer that may still write. */
    int fencedCount() {
        return fenced.size();
    }

    private static void releaseSlots(MemoryTier memory, List<Reservation.Slot> slots) {
        for (Reservation.Slot slot : slots) {
            memory.releaseSlot(slot.offset(), slot.block().length());
        }
    }

    int size() {
        return reservations.size();
    }

    /**
     * Ends every reservation whose time ran out before {@code now}; returns how many. Its slots return to the
     * pool, except where its writer is {@link WriterState#FENCED} ({@link TierEngine#reserve(List, TierId,
     * Duration, Supplier)}): those stay out of every other reservation's reach until the writer says so or is
     * fenced no more. A writer that stalled past the expiry can then only write into slots no block will ever
     * be made of. Slots whose writer may still write unfenced (none watches it, or no longer) are remembered
     * before they go back, so whoever gets one sends its CRC32Cs, until every writer that left them is
     * {@link WriterState#GONE} (one {@link WriterState#LOST} leaves them for good); the slots of a writer gone
     * already go back clean.
     */
    int expire(Instant now) {
        int lapsed = 0;
        for (Reservation r : reservations.values()) {
            if (!r.expiresAt().isBefore(now)) {
                continue;
            }
            Supplier<WriterState> writer = writers.get(r.id());
            WriterState state = writer == null ? WriterState.UNWATCHED : writer.get();
            if (state == WriterState.FENCED) {
                // moved in one step under the map's lock of that id: a commit or cancel takes it from one map
                // or the other, never from both
                boolean[] moved = {false};
                reservations.computeIfPresent(r.id(), (id, open) -> {
                    fenced.put(id, open);
                    moved[0] = true;
                    return null;
                });
                if (moved[0]) {
                    lapsed++;
                }
            } else {
                if (state == WriterState.UNWATCHED || state == WriterState.LOST) {
                    rememberUnfenced(r, state == WriterState.LOST ? null : writer); // before the slots go back
                }
                if (cancel(r.id())) {
                    lapsed++;
                }
            }
        }
        for (Reservation r : fenced.values()) {
            Supplier<WriterState> writer = writers.get(r.id());
            // none: named meanwhile (releaseFenced takes it from fenced first), nothing left to do
            WriterState state = writer == null ? WriterState.GONE : writer.get();
            if (state == WriterState.UNWATCHED || state == WriterState.LOST) {
                // a fence lifted while its writer may still write; before the slots go back
                rememberUnfenced(r, state == WriterState.LOST ? null : writer);
            }
            if (state != WriterState.FENCED) {
                releaseFenced(r.id());
            }
        }
        // the slots of a client that closed every connection are clean again; a lost one's stay, as no one's
        unfencedExpiries.forgetGone();
        return lapsed;
    }

    /**
     * Remembers an expired reservation's slots as ones its writer may still land bytes in at any time, before
     * they go back to the pool: a reservation or an in-place fill given one later must not trust the bytes
     * there to be its own writer's alone. {@code writer} (null: none to ask, never forgotten) is who left them.
     */
    private void rememberUnfenced(Reservation r, @Nullable Supplier<WriterState> writer) {
        for (Reservation.Slot slot : r.slots()) {
            unfencedExpiries.remember(r.tier(), slot.offset(), slot.block().length(), writer);
        }
    }
}
