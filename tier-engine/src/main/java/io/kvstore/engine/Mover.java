package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.catalog.Catalog;
import io.kvstore.catalog.CatalogEntry;
import io.kvstore.eviction.TierPolicy;
import io.kvstore.tier.BadCopyException;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.memory.SlabAllocator;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The only code that moves blocks between tiers: demotion past a tier's high watermark, eviction by
 * policy, promotion on a hit, write-through to the durable tier. Demotions and promotions run on one
 * background thread, scheduled by the data path ({@link #afterInsert}, {@link #maybePromote}); only a
 * write into a full tier evicts on the caller's thread ({@link #writeWithRoom}), because it cannot
 * proceed until a slot is free.
 *
 * <p>Pinned, leased, read and in-flight blocks are never moved away: a victim is claimed on its entry
 * first ({@link CatalogEntry#claimMove}), and a move that loses a race to a pin, lease or reader keeps
 * both copies.
 *
 * <p>Why it is long: every move is one protocol, claim ({@link CatalogEntry#claimMove}), copy, then
 * {@link #finishMove}, which decides who frees which slot and announces the copies in order. Demotion,
 * eviction, promotion and write-through are four users of that protocol; split into classes, each would
 * need the claim/finish pair and the corrupt-copy handling from the others, and the rules of who frees a
 * slot would live in several places instead of one.
 */
final class Mover implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Mover.class);
    /** How long a write into a full tier waits for readers and demotions to let go of slots. */
    private static final long ROOM_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private static final long ROOM_POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    /**
     * Evictable blocks of another slot size a write into a full tier looks past for one of its own slot size
     * before it takes the coldest, at its first try (each retry looks twice as far): such a victim frees a slot
     * the write can use at once.
     */
    private static final int PREFERRED_LOOKAHEAD = 8;
    /** Blocks demoted per group commit into a tier that batches writes. */
    private static final int DEMOTION_BATCH = 32;

    private final TierStack stack;
    private final Catalog catalog;
    private final Residency residency;
    private final EngineEvents events;
    private final EnumMap<TierId, AtomicBoolean> demotionQueued = new EnumMap<>(TierId.class);
    /**
     * Slots whose block no longer looks held but which are not free yet (a move's, a deferred free's, also those
     * of {@link Residency}): a write waiting for room must keep waiting through that window.
     */
    private final SlotsBeingFreed slotsBeingFreed;
    /** Per tier, why copies out of it fail (the first failure's reason), or null while they work. */
    private final EnumMap<TierId, AtomicReference<@Nullable String>> demotionFailing = new EnumMap<>(TierId.class);

    private final Set<BlockKey> promotionsQueued = ConcurrentHashMap.newKeySet();
    private final Set<String> writeThrough = ConcurrentHashMap.newKeySet();
    private final ExecutorService worker = Executors.newSingleThreadExecutor(
            Thread.ofPlatform().name("kvstore-mover").daemon().factory());
    private final AtomicInteger pendingMoves = new AtomicInteger();

    Mover(TierStack stack, Catalog catalog, Residency residency, SlotsBeingFreed slotsBeingFreed, EngineEvents events) {
        this.stack = stack;
        this.catalog = catalog;
        this.residency = residency;
        this.slotsBeingFreed = slotsBeingFreed;
        this.events = events;
        for (TierId id : stack.ids()) {
            demotionQueued.put(id, new AtomicBoolean());
            demotionFailing.put(id, new AtomicReference<>());
        }
    }

    // ---- making room --------------------------------------------------------------------------

    /**
     * Writes a copy of {@code entry}'s block into {@code tier}, evicting by policy to make room; waits
     * first for an old, unpublished slot of the same key to be freed by its owner.
     */
    void writeWithRoom(BlockTier tier, CatalogEntry entry, BlockRecord record, MemorySegment bytes) throws IOException {
        Residency.awaitOldCopyFreed(tier, entry);
        writeWithRoom(tier, record.length(), () -> tier.write(record, bytes));
    }

    /**
     * A copy of the same key in the target tier is still to be freed by its owner, and the caller holds the
     * block as a reader (a promotion, a write-through) or a claimed move: it must not wait there, since the
     * owner may be waiting for the block's readers to leave before it frees that slot.
     */
    static final class OldCopyBeingFreed extends RuntimeException {
        OldCopyBeingFreed(BlockTier tier, BlockKey key) {
            super(
                    "tier " + tier.id() + " still holds an old copy of " + key + " that is being freed",
                    null,
                    false,
                    false);
        }
    }

    /**
     * As {@link #writeWithRoom(BlockTier, CatalogEntry, BlockRecord, MemorySegment)}, for a caller that holds
     * {@code entry} as a reader or a claimed move: instead of waiting for an old copy to be freed it throws.
     *
     * @throws OldCopyBeingFreed when {@code tier} still holds a copy of the key that the entry does not publish
     */
    private void writeWhileHeld(BlockTier tier, CatalogEntry entry, int length, TierWrite write) throws IOException {
        if (tier.contains(entry.key()) && !entry.residentIn(tier.id())) {
            throw new OldCopyBeingFreed(tier, entry.key());
        }
        writeWithRoom(tier, entry, length, write);
    }

    /** One attempt at writing a copy into a tier; {@link TierFullException} when it has no room. */
    @FunctionalInterface
    private interface TierWrite {
        void write() throws IOException;
    }

    private void writeWithRoom(BlockTier tier, int length, TierWrite write) throws IOException {
        writeWithRoom(tier, null, length, write);
    }

    /**
     * Writes with room made as {@link #makeRoom} makes it; a copy of {@code copyOf}'s block (null: a first copy or a
     * slot) stops waiting for room once that block is deleted, and throws {@link Residency.StaleEntryException}.
     *
     * <p>Why: a delete counts the slots it cleared as being freed ({@link SlotsBeingFreed}), and a write into the
     * full tier waits while any is counted; but it frees them only after the copies of its blocks still being
     * written ({@link Residency#beginCopy}). A copy that waited for room there would wait on a count that cannot
     * move before it gives up (after {@link #ROOM_WAIT_NANOS}), and hold up the delete and every other write into
     * the tier as long. The copy was to be removed anyway: the delete won.
     */
    private void writeWithRoom(BlockTier tier, @Nullable CatalogEntry copyOf, int length, TierWrite write)
            throws IOException {
        long start = System.nanoTime();
        for (int attempt = 0; ; attempt++) {
            // read before the attempt: a slot freed after it found no room is then not missed (makeRoom)
            long freedBefore = slotsBeingFreed.ended(tier.id());
            try {
                write.write();
                return;
            } catch (TierFullException full) {
                if (copyOf != null && copyOf.dead()) {
                    throw new Residency.StaleEntryException(copyOf.key());
                }
                makeRoom(tier.id(), length, full, start, attempt, freedBefore);
            }
        }
    }

    /**
     * A slot of {@code length} bytes reserved in {@code memory} for an in-place write, room made for it as for any
     * write into a full tier ({@link #writeWithRoom}).
     */
    long reserveWithRoom(MemoryTier memory, int length) throws IOException {
        long[] offset = new long[1];
        writeWithRoom(memory, length, () -> offset[0] = memory.reserveSlot(length));
        return offset[0];
    }

    /**
     * Frees room in a full tier for a waiting write: evicts one block when one is evictable; otherwise, while
     * some block is held only by a reader or an in-flight move, or a finished move is freeing its slot (a
     * demotion frees its slot within moments), or a slot was freed since before the write's attempt (it may be
     * free now), waits a little so the caller can try again. Writers thus queue
     * behind the demoter instead of failing.
     *
     * @param attempt how many times this write made room before (0 at its first): each retry looks twice as far
     *     for a victim of its own length ({@link #preferredVictim})
     * @param freedBefore {@link SlotsBeingFreed#ended} read before the attempt that found no room: read here
     *     instead, a slot freed between that attempt and this call would go unseen, and the write fail although
     *     room came
     * @throws TierFullException {@code full}, when everything left is pinned or leased, or no room came
     *     within {@link #ROOM_WAIT_NANOS} of {@code startNanos}
     */
    void makeRoom(TierId id, int length, TierFullException full, long startNanos, int attempt, long freedBefore)
            throws TierFullException {
        if (evictOne(id, length, PREFERRED_LOOKAHEAD << Math.min(attempt, 24))) {
            return;
        }
        // a look, not a victim search: the block found is not evicted, so the policy must not take it for a victim.
        // The count is asked again after it: a bit cleared once the look passed its block was counted before (under
        // the entry's monitor, which the look takes too), and is still counted or has ended by then
        boolean transientHold = slotsBeingFreed.any(id)
                || stack.policy(id).anyInOrder(k -> {
                    CatalogEntry e = catalog.get(k);
                    return e != null && e.heldBrieflyIn(id);
                })
                || slotsBeingFreed.any(id);
        boolean movedMeanwhile = slotsBeingFreed.ended(id) != freedBefore;
        if ((!transientHold && !movedMeanwhile) || System.nanoTime() - startNanos > ROOM_WAIT_NANOS) {
            throw full;
        }
        LockSupport.parkNanos(ROOM_POLL_NANOS);
    }

    // ---- after a store ------------------------------------------------------------------------

    /** What follows a new copy in {@code stored.tier()}: write-through when its namespace asks, then demotion. */
    void afterStore(Residency.Stored stored) throws IOException {
        writeThroughIfAsked(stored);
        afterInsert(stored.tier());
    }

    /**
     * Write-through for a store, also one that found its block already resident: a store whose copy
     * through failed left the block in a faster tier only, and the store that repeats it must not return
     * before the block is on the durable tier.
     */
    void writeThroughIfAsked(Residency.Stored stored) throws IOException {
        CatalogEntry entry = stored.entry();
        TierId durable = stack.slowest();
        if (durable != stored.tier()
                && !entry.residentIn(durable)
                && writeThrough.contains(entry.key().namespace())) {
            try {
                copyThrough(entry, stored.tier(), durable);
            } catch (BlockNotFoundException deletedMeanwhile) {
                // a delete that came after this store won; nothing is left to copy through
            }
        }
    }

    /**
     * Write-through: copies a just-stored block to the slowest (durable) tier before the put returns,
     * holding it as a reader so a concurrent delete waits for the copy to be published or removed.
     */
    private void copyThrough(CatalogEntry entry, TierId from, TierId to) throws IOException {
        BlockRecord record = Residency.recordOf(entry);
        BlockTier durable = stack.get(to);
        long start = System.nanoTime();
        while (true) {
            try {
                residency.read(
                        entry,
                        (tier, rec, bytes) -> {
                            if (entry.residentIn(to)) {
                                return Boolean.FALSE; // there already
                            }
                            switch (residency.beginCopy(entry, to)) {
                                case DELETED -> {
                                    return Boolean.FALSE;
                                }
                                case BUSY -> throw new CopyInFlight();
                                case STARTED -> {}
                            }
                            try {
                                writeWhileHeld(durable, entry, record.length(), () -> durable.write(record, bytes));
                                if (addCopy(entry, to, record)) {
                                    stack.policy(to).onInsert(entry.key(), entry.parentKey());
                                    events.moved(from, to, entry.length(), System.nanoTime() - start);
                                } else {
                                    Residency.removeUnrecorded(durable, entry.key()); // a delete won
                                }
                            } finally {
                                residency.endCopy(entry, to);
                            }
                            return Boolean.TRUE;
                        },
                        null);
                return;
            } catch (Residency.StaleEntryException deletedMeanwhile) {
                return; // a delete that came after this store won while the copy waited for room
            } catch (CopyInFlight inFlight) {
                // a demotion of the block into the durable tier: its copy is recorded (looked at again above) or,
                // when a delete won, removed. Waited for with the read let go, so that the demotion, finishing with
                // its claim the block's only reader, frees the slot it moved the block out of
                residency.awaitCopyEnded(entry, to);
            } catch (OldCopyBeingFreed beingFreed) {
                // waited for with the read let go: its freeing may be waiting for this very read to end
                try {
                    Residency.awaitOldCopyFreed(durable, entry);
                } catch (Residency.StaleEntryException deletedMeanwhile) {
                    return; // a delete that came after this store won; nothing is left to copy through
                }
            }
        }
    }

    /**
     * Another copy of the block into the same tier is being written ({@link Residency.CopyStart#BUSY}), found by a
     * write-through that holds the block as a reader: it waits for that copy with the read let go.
     */
    private static final class CopyInFlight extends RuntimeException {
        CopyInFlight() {
            super(null, null, false, false);
        }
    }

    /**
     * Chooses write-back (the default: blocks reach the slowest tier when they are demoted) or
     * write-through (every put also writes the slowest tier before it returns) for a namespace.
     */
    void setWriteThrough(String namespace, boolean enabled) {
        if (enabled) {
            writeThrough.add(namespace);
        } else {
            writeThrough.remove(namespace);
        }
    }

    /** Schedules a demotion of {@code id} when it passed its high watermark and none is queued yet. */
    void afterInsert(TierId id) {
        if (stack.aboveHighWatermark(id) && queuedFlag(id).compareAndSet(false, true)) {
            submit(() -> {
                queuedFlag(id).set(false);
                demoteToLowWatermark(id);
            });
        }
    }

    private AtomicBoolean queuedFlag(TierId id) {
        return Objects.requireNonNull(demotionQueued.get(id), "every configured tier has a flag");
    }

    // ---- demotion -----------------------------------------------------------------------------

    /**
     * Moves blocks out of {@code id} by policy until it is at or below its low watermark. Into a tier that
     * batches writes (NVMe) the victims move in batches, one group commit each, instead of paying a data
     * sync and an index sync per block.
     */
    void demoteToLowWatermark(TierId id) {
        BlockTier tier = stack.get(id);
        TierId below = stack.demotesTo(id);
        boolean batched = below != null && stack.get(below).batchesWrites();
        int budget = tier.blockCount() * 2 + 16;
        while (budget > 0) {
            long excess = stack.excessOverLowWatermark(id);
            if (excess <= 0) {
                break;
            }
            int moved = batched ? demoteBatch(id, Objects.requireNonNull(below), excess) : 0;
            if (moved == 0) {
                if (!evictOne(id, 0, 0)) {
                    break;
                }
                moved = 1;
            }
            budget -= moved;
        }
    }

    /**
     * Claims up to {@link #DEMOTION_BATCH} victims worth about {@code excessBytes}, writes them to the
     * tier below in one batch, then finishes each move as {@link #moveOut} does.
     *
     * @return how many victims were handled; 0 when none could be claimed or the batch write failed (the
     *     caller then falls back to one block at a time, which also makes room in the tier below)
     */
    private int demoteBatch(TierId id, TierId below, long excessBytes) {
        BlockTier to = stack.get(below);
        TierPolicy policy = stack.policy(id);
        List<CatalogEntry> claimed = new ArrayList<>();
        long bytes = 0;
        for (int attempts = 0;
                claimed.size() < DEMOTION_BATCH && bytes < excessBytes && attempts < 4 * DEMOTION_BATCH;
                attempts++) {
            BlockKey victim = policy.nextVictim(k -> evictable(k, id));
            if (victim == null) {
                break;
            }
            CatalogEntry entry = catalog.get(victim);
            if (entry == null || !entry.residentIn(id)) {
                policy.onRemove(victim);
                continue;
            }
            if (!entry.claimMove(id)) {
                continue;
            }
            if (!entry.residentIn(below) && to.contains(victim)) {
                // an older copy below is still being freed by its owner; leave this block for later
                entry.abortMove();
                continue;
            }
            if (residency.beginCopy(entry, below) != Residency.CopyStart.STARTED) {
                // deleted meanwhile (the delete frees the slot), or a write-through copies it below now
                entry.abortMove();
                continue;
            }
            claimed.add(entry);
            bytes += entry.length();
        }
        if (claimed.isEmpty()) {
            return 0;
        }
        try {
            return demoteClaimed(id, below, claimed);
        } finally {
            claimed.forEach(entry -> residency.endCopy(entry, below));
        }
    }

    /** {@link #demoteBatch} once its victims are claimed and their copies registered ({@link Residency#beginCopy}). */
    private int demoteClaimed(TierId id, TierId below, List<CatalogEntry> claimed) {
        BlockTier from = stack.get(id);
        BlockTier to = stack.get(below);
        List<BlockRecord> records = new ArrayList<>();
        List<MemorySegment> sources = new ArrayList<>();
        List<CatalogEntry> copied = new ArrayList<>();
        List<CatalogEntry> corrupt = new ArrayList<>();
        long copiedBytes = 0;
        DeviceStoragePath direct = stack.deviceStorage(id, below);
        try (Arena arena = Arena.ofConfined()) {
            for (CatalogEntry entry : claimed) {
                if (entry.residentIn(below)) {
                    continue;
                }
                try {
                    if (direct == null) {
                        sources.add(source(from, entry, arena));
                    }
                    records.add(Residency.recordOf(entry));
                    copied.add(entry);
                    copiedBytes += entry.length();
                } catch (IOException failedChecksum) {
                    corrupt.add(entry);
                }
            }
            long start = System.nanoTime();
            try {
                if (direct != null) {
                    direct.demote(records);
                } else {
                    to.writeAll(records, sources);
                }
            } catch (IOException | RuntimeException e) {
                for (CatalogEntry entry : claimed) {
                    entry.abortMove();
                }
                log.debug(
                        "batch demotion of {} blocks from {} failed ({}); moving them one by one",
                        claimed.size(),
                        id,
                        e.getMessage());
                return 0;
            }
            events.moved(id, below, copiedBytes, System.nanoTime() - start);
        }
        for (CatalogEntry entry : claimed) {
            boolean droppedCorrupt = false;
            if (corrupt.contains(entry)) {
                droppedCorrupt = dropCorruptWhileMoving(entry, id);
            }
            finishMove(entry, id, droppedCorrupt ? null : below, copied.contains(entry), droppedCorrupt);
        }
        afterInsert(below);
        return claimed.size();
    }

    /** A verified view of the block in a memory tier, else its bytes read into {@code arena}. */
    private static MemorySegment source(BlockTier from, CatalogEntry entry, Arena arena) throws IOException {
        MemorySegment view = from.verifiedView(entry.key());
        if (view != null) {
            return view;
        }
        MemorySegment buffer = arena.allocate(entry.length(), 4096);
        from.read(entry.key(), buffer);
        return buffer;
    }

    // ---- eviction -----------------------------------------------------------------------------

    /**
     * Moves one block out of {@code id} by its policy: down to the next configured tier when there is
     * one, else dropped. A block of {@code preferLength}'s slot size among the coldest few goes first, so the
     * freed slot fits the waiting put ({@link #preferredVictim}, past at most {@code lookahead} of another size).
     *
     * @return false when no block can be evicted
     */
    private boolean evictOne(TierId id, int preferLength, int lookahead) {
        TierPolicy policy = stack.policy(id);
        BlockKey victim = preferLength > 0 ? preferredVictim(policy, id, preferLength, lookahead) : null;
        if (victim == null) {
            victim = policy.nextVictim(k -> evictable(k, id));
        }
        if (victim == null) {
            return false;
        }
        return moveOut(id, victim);
    }

    /**
     * The policy's first evictable block whose slot is the size a block of {@code length} takes, among its first
     * {@code lookahead} + 1 evictable blocks, or null. Slot size, not length, decides whether a freed slot can be
     * used: every tier rounds a block up to whole 4 KiB ({@link SlabAllocator#slotSizeFor}), so a block a little
     * shorter than the write's frees a slot it fits. Evictable blocks of another size are not set aside (nothing
     * tells the policy when they would fit again), so a search that went on past them would walk a whole tier of
     * another layout on every store, under the tier's policy lock; it gives up instead, and the caller evicts the
     * coldest block. That block may free no slot the store can use (half a slab), so each retry of one store
     * looks twice as far as the one before ({@link #makeRoom}): a victim of its own size further back is found
     * after a few evictions, not after every colder block went, and one store walks at most about twice the
     * tier. In a tier of one layout the first evictable block is the one taken, as before.
     */
    private @Nullable BlockKey preferredVictim(TierPolicy policy, TierId id, int length, int lookahead) {
        long slotSize = SlabAllocator.slotSizeFor(length);
        int[] otherSizes = {0};
        // the block the look gives up at is no victim: the policy must not take it for one (LFU ages on its delete)
        return policy.nextVictim(
                k -> evictable(k, id) && slotSizeOf(k) == slotSize,
                k -> evictable(k, id) && ++otherSizes[0] > lookahead);
    }

    /**
     * Moves {@code victim} out of tier {@code id}: copied down to the next configured tier when there is
     * one (and it is not there already), then its slot in {@code id} is freed, unless someone pinned,
     * leased or began reading it meanwhile, in which case both copies stay. When the copy below fails (a
     * full or failing disk) the block stays where it is: an acknowledged block is never dropped for want of
     * room below; the tier then fills and new stores are refused (507) instead.
     *
     * @return false only when the copy below failed and the block stayed
     */
    private boolean moveOut(TierId id, BlockKey victim) {
        CatalogEntry entry = catalog.get(victim);
        if (entry == null || !entry.residentIn(id)) {
            stack.policy(id).onRemove(victim);
            return true;
        }
        if (!entry.claimMove(id)) {
            return true;
        }
        TierId below = stack.demotesTo(id);
        if (residency.beginCopy(entry, below) != Residency.CopyStart.STARTED) {
            // deleted meanwhile (the delete frees the slot), or a write-through copies it below now: as a lost race
            entry.abortMove();
            return true;
        }
        try {
            return moveOutClaimed(id, entry);
        } finally {
            residency.endCopy(entry, below);
        }
    }

    /** {@link #moveOut} once the move is claimed and its copy registered ({@link Residency#beginCopy}). */
    private boolean moveOutClaimed(TierId id, CatalogEntry entry) {
        TierId below = stack.demotesTo(id);
        TierId copiedTo = null;
        boolean newCopy = false;
        boolean droppedCorrupt = false;
        try {
            if (below != null) {
                if (!entry.residentIn(below)) {
                    copyDown(entry, id, below);
                    newCopy = true;
                }
                copiedTo = below;
            }
        } catch (Residency.StaleEntryException deleted) {
            // a delete removed the block while we copied it; finishMove below sees it dead
        } catch (OldCopyBeingFreed beingFreed) {
            // an older copy below is still being freed by its owner, maybe once our claim ends: as a lost race
            entry.abortMove();
            return true;
        } catch (ChecksumMismatchException corrupt) {
            droppedCorrupt = dropCorruptWhileMoving(entry, id);
        } catch (IOException | RuntimeException e) {
            entry.abortMove();
            demotionFailing(id, Objects.requireNonNull(below), e);
            return false;
        }
        if (newCopy) {
            demotionWorks(id);
        }
        if (finishMove(entry, id, copiedTo, newCopy, droppedCorrupt)) {
            afterInsert(Objects.requireNonNull(copiedTo));
        }
        return true;
    }

    /** Demotion out of {@code id} fails: said once per state change (a log line and an event), not per block. */
    private void demotionFailing(TierId id, TierId below, Exception e) {
        String reason = "demotion from " + id + " to " + below + " fails (" + e + "); blocks stay in " + id;
        if (Objects.requireNonNull(demotionFailing.get(id)).compareAndSet(null, reason)) {
            log.warn(
                    "demotion from {} to {} fails ({}); blocks stay in {} and new stores are refused once it is full",
                    id,
                    below,
                    e.toString(),
                    id);
            events.demotionFailing(id, below, e.toString());
        }
    }

    private void demotionWorks(TierId id) {
        if (Objects.requireNonNull(demotionFailing.get(id)).getAndSet(null) != null) {
            log.info("demotion from {} works again", id);
            events.demotionRecovered(id);
        }
    }

    /** Why copies out of {@code id} fail, or null while they work (or it was never tried). */
    @Nullable
    String demotionFailure(TierId id) {
        AtomicReference<@Nullable String> failing = demotionFailing.get(id);
        return failing == null ? null : failing.get();
    }

    /**
     * Records a new copy in {@code to} and announces it, in order with any removal: see Residency#publish.
     * A copy a concurrent move into {@code to} already recorded (the tier skipped our write) is not announced
     * again: one copy, one event.
     */
    private boolean addCopy(CatalogEntry entry, TierId to, BlockRecord record) {
        synchronized (entry) {
            boolean known = entry.residentIn(to);
            boolean added = entry.addTier(to);
            if (added && !known) {
                events.copyAdded(to, record);
            }
            return added;
        }
    }

    /**
     * Clears the tier bit of a copy found corrupt by the move that claimed it; its slot counts as being freed
     * from then until {@link #finishMove} has freed it (after the block's readers).
     */
    private boolean dropCorruptWhileMoving(CatalogEntry entry, TierId id) {
        boolean dropped;
        synchronized (entry) { // the event is ordered with the change: see Residency#publish
            dropped = entry.dropTier(id);
            if (dropped) {
                slotsBeingFreed.begin(id); // under the monitor, as the bit: see makeRoom
                events.copyRemoved(id, entry.key(), entry.length());
            }
        }
        events.checksumFailed(id, entry.key());
        log.warn("dropped corrupt copy of {} in tier {} during demotion", entry.key(), id);
        return dropped;
    }

    /**
     * Ends a claimed move: records the copy below (or removes it when a delete won the race), and frees
     * the slot in {@code from} when the move cleared it or the copy there was corrupt.
     *
     * @return whether a new copy below was recorded
     */
    private boolean finishMove(
            CatalogEntry entry, TierId from, @Nullable TierId copiedTo, boolean newCopy, boolean droppedCorrupt) {
        slotsBeingFreed.begin(from);
        try {
            return finishMoveCounted(entry, from, copiedTo, newCopy, droppedCorrupt);
        } finally {
            slotsBeingFreed.end(from);
        }
    }

    private boolean finishMoveCounted(
            CatalogEntry entry, TierId from, @Nullable TierId copiedTo, boolean newCopy, boolean droppedCorrupt) {
        BlockKey key = entry.key();
        CatalogEntry.MoveOutcome outcome;
        long fromCopy;
        synchronized (entry) { // the events are ordered with the change: see Residency#publish
            // the copy in `from` this move frees, not one written there after its bit is cleared (BlockTier#copyOf)
            fromCopy = stack.get(from).copyOf(key);
            // a write-through may have recorded (and announced) the same copy while we wrote it
            boolean known = copiedTo != null && entry.residentIn(copiedTo);
            outcome = entry.finishMove(from, copiedTo);
            if (newCopy && outcome.recordedCopy() && !known) {
                events.copyAdded(Objects.requireNonNull(copiedTo), Residency.recordOf(entry));
            }
            if (outcome.clearedFrom()) {
                events.copyRemoved(from, key, entry.length());
            }
        }
        if (newCopy && !outcome.recordedCopy()) {
            // a delete won the race: the copy we just made belongs to nobody
            Residency.removeUnrecorded(stack.get(Objects.requireNonNull(copiedTo)), key);
            newCopy = false;
        }
        if (newCopy) {
            TierId to = Objects.requireNonNull(copiedTo);
            // a delete may drop the copy once it is recorded, before the policy hears of it (see Residency#store)
            stack.policy(to).onInsertIfResident(key, entry.parentKey(), () -> entry.residentIn(to));
            events.demoted(from, to, entry.length());
        }
        if (outcome.clearedFrom() || droppedCorrupt) {
            Runnable free = () -> {
                stack.freeCopy(from, key, fromCopy); // the policy first, as there
                events.evicted(from, stack.policy(from).kind(), entry.length());
                catalog.removeIfDead(entry);
            };
            if (droppedCorrupt) {
                // readers that began after our claim may still be on the slot; as Residency#drop, free it
                // (and let the entry leave the catalog) only after them, without waiting for them here. Counted
                // as being freed since dropCorruptWhileMoving, so a store into the full tier waits for the slot
                slotsBeingFreed.endWhenNoReaders(entry, List.of(from), free);
            } else {
                free.run();
            }
        }
        return newCopy;
    }

    private boolean evictable(BlockKey key, TierId id) {
        CatalogEntry entry = catalog.get(key);
        return entry == null || entry.evictableFrom(id);
    }

    /** The size of the slot {@code key}'s block takes in every tier, or -1 when it is gone. */
    private long slotSizeOf(BlockKey key) {
        CatalogEntry entry = catalog.get(key);
        return entry == null ? -1 : SlabAllocator.slotSizeFor(entry.length());
    }

    private void copyDown(CatalogEntry entry, TierId from, TierId to) throws IOException {
        long start = System.nanoTime();
        DeviceStoragePath direct = stack.deviceStorage(from, to);
        if (direct != null) {
            BlockRecord record = Residency.recordOf(entry);
            writeWhileHeld(stack.get(to), entry, record.length(), () -> direct.demote(List.of(record)));
        } else {
            BlockTier below = stack.get(to);
            BlockRecord record = Residency.recordOf(entry);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment bytes = source(stack.get(from), entry, arena);
                writeWhileHeld(below, entry, record.length(), () -> below.write(record, bytes));
            }
        }
        events.moved(from, to, entry.length(), System.nanoTime() - start);
    }

    /**
     * Moves the policy's next evictable victim among {@code which} out of tier {@code id} until the limits
     * are reached or none is left; bounded by twice the tier's block count, so concurrent stores cannot
     * keep it running. Counts what actually left the tier.
     */
    EvictionReport evictWhile(TierId id, Predicate<BlockKey> which, long maxBytes, int maxBlocks) {
        BlockTier tier = stack.get(id);
        TierPolicy policy = stack.policy(id);
        int blocks = 0;
        long bytes = 0;
        int budget = tier.blockCount() * 2 + 16;
        BlockKey victim;
        while (blocks < maxBlocks
                && bytes < maxBytes
                && budget-- > 0
                && (victim = policy.nextVictim(k -> which.test(k) && evictable(k, id))) != null) {
            int before = tier.blockCount();
            long used = tier.usedBytes();
            moveOut(id, victim);
            blocks += Math.max(0, before - tier.blockCount());
            bytes += Math.max(0, used - tier.usedBytes());
        }
        return new EvictionReport(blocks, bytes);
    }

    // ---- promotion ----------------------------------------------------------------------------

    /** Schedules a copy of a block hit in {@code hitTier} into the tier above, when that tier asks for it. */
    void maybePromote(CatalogEntry entry, TierId hitTier) {
        TierId above = stack.promotesTo(hitTier);
        if (above == null || !stack.settings(above).promoteOnHit() || !promotionsQueued.add(entry.key())) {
            return;
        }
        submit(() -> {
            try {
                promote(entry, hitTier, above);
            } catch (IOException | RuntimeException e) {
                log.debug("promotion of {} to {} skipped: {}", entry.key(), above, e.getMessage());
            } finally {
                promotionsQueued.remove(entry.key());
            }
        });
    }

    private void promote(CatalogEntry entry, TierId from, TierId to) throws IOException {
        if (entry.residentIn(to) || entry.dead()) {
            return;
        }
        BlockRecord record = Residency.recordOf(entry);
        long start = System.nanoTime();
        DeviceStoragePath direct = stack.deviceStorage(from, to);
        if (direct != null) {
            promoteDirect(entry, record, from, to, direct);
            afterInsert(to);
            return;
        }
        // Everything happens while the read holds the block: a concurrent delete waits for us, so the
        // copy we add is either published on the live entry or removed by us, never left behind. An old copy
        // still being freed above is not waited for (OldCopyBeingFreed): the promotion is skipped, and a
        // later hit promotes the block again.
        residency.read(
                entry,
                (tier, rec, bytes) -> {
                    if (tier != from || entry.residentIn(to)) {
                        return Boolean.FALSE;
                    }
                    BlockTier above = stack.get(to);
                    writeWhileHeld(above, entry, record.length(), () -> above.write(record, bytes));
                    publishPromoted(entry, record, from, to, start);
                    return Boolean.TRUE;
                },
                null);
        afterInsert(to);
    }

    /** Announces a promoted copy, or removes it when a delete won the race (the entry is held as a reader). */
    private void publishPromoted(CatalogEntry entry, BlockRecord record, TierId from, TierId to, long startNanos) {
        if (addCopy(entry, to, record)) {
            stack.policy(to).onInsert(entry.key(), entry.parentKey());
            events.promoted(from, to, entry.length());
            events.moved(from, to, entry.length(), System.nanoTime() - startNanos);
        } else {
            stack.get(to).delete(entry.key());
        }
    }

    /**
     * A promotion that never passes through host memory (NVMe straight to HBM): the block is held as a
     * reader of its copy in {@code from}, so a delete waits for us, while the device path copies and checks
     * it. A copy that fails its check is dropped from {@code from} and counted.
     */
    private void promoteDirect(CatalogEntry entry, BlockRecord record, TierId from, TierId to, DeviceStoragePath direct)
            throws IOException {
        long start = System.nanoTime();
        TierId held = entry.beginRead(from);
        if (held == null) {
            return;
        }
        BadCopyException bad = null;
        try {
            if (held != from || entry.residentIn(to)) {
                return;
            }
            writeWhileHeld(stack.get(to), entry, record.length(), () -> direct.promote(record));
            publishPromoted(entry, record, from, to, start);
        } catch (BadCopyException failed) {
            // corrupt, or unreadable (the tier already dropped it): the catalog drops that copy too
            bad = failed;
        } catch (DeviceStoragePath.DeviceCopyMismatch arrivedBad) {
            events.checksumFailed(to, entry.key());
            log.warn("promotion of {} from {} to {} refused: {}", entry.key(), from, to, arrivedBad.getMessage());
        } finally {
            entry.endRead();
        }
        if (bad != null) {
            residency.dropBad(entry, from, bad);
        }
    }

    // ---- the background thread ----------------------------------------------------------------

    /**
     * Waits until queued demotions and promotions have run, including moves they queued in turn (for
     * tests and orderly shutdown).
     */
    void awaitMoves() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (pendingMoves.get() > 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("background moves did not finish within 60 s");
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private void submit(Runnable move) {
        pendingMoves.incrementAndGet();
        try {
            worker.execute(() -> {
                try {
                    move.run();
                } finally {
                    pendingMoves.decrementAndGet();
                }
            });
        } catch (RuntimeException rejected) {
            pendingMoves.decrementAndGet();
            throw rejected;
        }
    }

    @Override
    public void close() {
        worker.shutdown();
        try {
            if (!worker.awaitTermination(30, TimeUnit.SECONDS)) {
                worker.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
