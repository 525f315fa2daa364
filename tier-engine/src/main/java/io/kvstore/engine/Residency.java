package io.kvstore.engine;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.catalog.Catalog;
import io.kvstore.catalog.CatalogEntry;
import io.kvstore.concurrent.SpinWait;
import io.kvstore.tier.BadCopyException;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.UnreadableCopyException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The copy protocol: how a block's copy becomes visible in a tier, is read, and goes away. Nothing else
 * sets or clears a tier bit on a new block, serves bytes, or frees a slot a reader might still use.
 *
 * <p>Ownership rules, which every method here keeps: a copy becomes visible only after its bytes are
 * complete in the tier (tier write, then catalog bit); one writer per entry at a time ({@link
 * CatalogEntry#claimWrite}); whoever clears a tier bit frees that slot, and only after the entry has no
 * reader left; a reader reads through the entry it holds, so a delete of that entry waits for it. Every
 * read is checked against the CRC32C taken at store time; a copy that fails is dropped and the next
 * slower copy is served.
 *
 * <p>Why it is long: the ownership rules above are one argument, kept in one class: how a copy is published, read,
 * dropped and deleted (with a deletion made durable before its slots are freed after the last reader) are the
 * cases of that argument, and split apart they would no longer show who frees which slot when.
 */
final class Residency {

    private static final Logger log = LoggerFactory.getLogger(Residency.class);
    /** Deletions of a namespace made durable in one write per tier (see {@link #forgetAtRestart}). */
    private static final int FORGET_BATCH = 1024;

    private final TierStack stack;
    private final Catalog catalog;
    private final SlotsBeingFreed slotsBeingFreed;
    private final EngineEvents events;
    /**
     * Per entry, how many copies of its block a move or a write-through is writing into a tier and has not yet
     * recorded or removed ({@link #beginCopy}): a delete returns only after them, so a durable copy that lost to
     * it is removed durably before the delete says the block is gone.
     */
    private final ConcurrentHashMap<CatalogEntry, Integer> copying = new ConcurrentHashMap<>();
    /**
     * The entries of {@link #copying} whose copy this thread writes: a delete made on that very thread (by an event
     * observer the copy calls) cannot wait for it, and does not.
     */
    private final ThreadLocal<List<CatalogEntry>> ownCopies = ThreadLocal.withInitial(ArrayList::new);
    /**
     * The tiers each copy of {@link #copying} writes into: one copy of a block into a tier at a time ({@link
     * #beginCopy}).
     */
    private final Set<CopyInto> copiesInto = ConcurrentHashMap.newKeySet();

    Residency(TierStack stack, Catalog catalog, SlotsBeingFreed slotsBeingFreed, EngineEvents events) {
        this.stack = stack;
        this.catalog = catalog;
        this.slotsBeingFreed = slotsBeingFreed;
        this.events = events;
    }

    /** Puts the blocks that durable tiers still hold back into the catalog (after a restart). */
    void recover() {
        for (BlockTier tier : stack.all()) {
            List<BlockRecord> records = tier.recovered();
            for (BlockRecord r : ParentFirst.order(records)) {
                CatalogEntry entry = catalog.entryFor(r.key(), r.parent(), r.length(), r.crc32c());
                entry.addTier(tier.id());
                events.copyAdded(tier.id(), r);
                stack.policy(tier.id()).onInsert(r.key(), entry.parentKey());
            }
            if (!records.isEmpty()) {
                log.info("tier {}: {} blocks back in the catalog after restart", tier.id(), records.size());
            }
        }
    }

    /** The entry died while a copy was being written; the caller starts over or gives up. */
    static final class StaleEntryException extends RuntimeException {
        StaleEntryException(BlockKey key) {
            super("block " + key + " was removed while a copy was being written", null, false, false);
        }
    }

    /** How {@link #store} puts the first copy of a block into its tier. */
    @FunctionalInterface
    interface FirstCopy {
        void write(CatalogEntry entry, BlockRecord record) throws IOException;
    }

    /**
     * Where a stored block is, and whether this store made the copy (false: it was already resident).
     */
    record Stored(TierId tier, boolean copied, CatalogEntry entry) {}

    /**
     * The one way a block becomes resident: claim the entry as its only writer, make the first copy,
     * publish it. A key already resident is left as it is (same bytes required). What follows a new copy
     * (write-through, demotion) is the caller's.
     */
    Stored store(BlockKey key, @Nullable BlockHash parent, int length, int crc, BlockTier tier, FirstCopy firstCopy)
            throws IOException {
        TierId target = tier.id();
        SpinWait busy = null; // made on the first wait only: no garbage on the store path
        while (true) {
            CatalogEntry entry = catalog.entryFor(key, parent, length, crc);
            switch (entry.claimWrite()) {
                case RESIDENT -> {
                    TierId holder = entry.fastestTier();
                    if (holder == null) {
                        continue;
                    }
                    if (entry.length() != length || entry.crc32c() != crc) {
                        throw new BlockConflictException("block " + key + " is already stored with different bytes ("
                                + entry.length() + " bytes, crc " + Integer.toHexString(entry.crc32c()) + ")");
                    }
                    return new Stored(holder, false, entry);
                }
                case BUSY, DEAD -> {
                    if (busy == null) {
                        busy = SpinWait.upTo(SpinWait.DEFAULT_NANOS);
                    }
                    busy.pause(() -> "block " + key + " is busy: another store of it has not finished in 30 s");
                    continue;
                }
                case OWNED -> {}
            }
            BlockRecord record = new BlockRecord(key, parent, length, crc);
            try {
                firstCopy.write(entry, record);
            } catch (StaleEntryException stale) {
                entry.abandonWrite();
                catalog.removeIfDead(entry);
                continue;
            } catch (IOException | RuntimeException e) {
                entry.abandonWrite();
                catalog.removeIfDead(entry);
                throw e;
            }
            if (publish(entry, target, record)) {
                // a delete may drop the copy before the policy hears of it: asked again under its lock
                stack.policy(target).onInsertIfResident(key, entry.parentKey(), () -> entry.residentIn(target));
                return new Stored(target, true, entry);
            }
            // The entry was deleted while we wrote; our copy is ours alone to remove, and the entry leaves
            // the catalog only now, so a new entry of this key cannot meet our copy.
            tier.delete(key);
            catalog.removeIfDead(entry);
        }
    }

    /**
     * Waits until {@code tier} no longer holds a copy of the key that {@code entry} has not published. A
     * tier may still hold an old slot of the same key whose bit was cleared but which its owner has not
     * freed yet; writing then would find that slot and skip, and the owner would free it under us.
     *
     * @throws StaleEntryException when the entry dies meanwhile
     */
    static void awaitOldCopyFreed(BlockTier tier, CatalogEntry entry) {
        BlockKey key = entry.key();
        SpinWait wait = null;
        while (tier.contains(key) && !entry.residentIn(tier.id())) {
            if (entry.dead()) {
                throw new StaleEntryException(key);
            }
            if (wait == null) {
                wait = SpinWait.upTo(SpinWait.DEFAULT_NANOS);
            }
            wait.pause(() -> "tier " + tier.id() + " still holds an unpublished copy of " + key + " after 30 s");
        }
    }

    /** Receives a block's verified bytes; the view is valid only during the call. */
    @FunctionalInterface
    interface Reader<T> {
        T read(TierId tier, BlockRecord record, MemorySegment bytes) throws IOException;
    }

    /** What a read returned and which tier served it. */
    record Hit<T>(T value, TierId tier) {}

    /** The live entry of {@code key}. */
    CatalogEntry entry(BlockKey key) throws BlockNotFoundException {
        CatalogEntry entry = catalog.get(key);
        if (entry == null) {
            throw new BlockNotFoundException("no block " + key);
        }
        return entry;
    }

    /**
     * Reads through this very entry, not whatever the catalog maps its key to now: a mover holding an
     * older entry must register as that entry's reader, so a delete of it waits for the mover. Bytes come
     * from the fastest tier holding a good copy; from a memory tier they are handed over in place, from a
     * slower tier they are read into {@code dst} when it is large enough, else into a temporary buffer.
     *
     * @throws BlockNotFoundException when no tier holds a good copy
     */
    <T> Hit<T> read(CatalogEntry entry, Reader<T> reader, @Nullable MemorySegment dst) throws IOException {
        BlockKey key = entry.key();
        TierId from = stack.fastest();
        while (true) {
            TierId tierId = entry.beginRead(from);
            if (tierId == null) {
                throw new BlockNotFoundException("no good copy of block " + key + " is left");
            }
            BlockTier tier = stack.get(tierId);
            boolean held = true;
            try {
                BlockRecord record = recordOf(entry);
                T result;
                MemorySegment view = tier.verifiedView(key);
                if (view != null) {
                    result = reader.read(tierId, record, view);
                } else if (dst != null && dst.byteSize() >= entry.length()) {
                    tier.read(key, dst);
                    result = reader.read(tierId, record, dst.asSlice(0, entry.length()));
                } else {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment buffer = arena.allocate(entry.length(), 4096);
                        tier.read(key, buffer);
                        result = reader.read(tierId, record, buffer);
                    }
                }
                entry.endRead();
                held = false;
                catalog.touch(entry);
                stack.policy(tierId).recordAccess(key);
                return new Hit<>(result, tierId);
            } catch (BadCopyException bad) {
                entry.endRead();
                held = false;
                dropBad(entry, tierId, bad);
                TierId next = stack.below(tierId);
                if (next == null) {
                    throw bad;
                }
                from = next;
            } finally {
                if (held) {
                    entry.endRead();
                }
            }
        }
    }

    /**
     * Makes a written copy readable and announces it. The change and its event happen under the entry's
     * monitor (the one its own methods synchronise on), as every removal's does: two threads changing
     * one block's copies announce them in the order they made them, so a subscriber that keeps a ledger
     * of copies from the events never sees a removal before the addition it undoes. Only events are sent
     * under the monitor; policies and tiers are called after it (a policy's lock may be held while it asks
     * an entry whether it is evictable).
     */
    private boolean publish(CatalogEntry entry, TierId target, BlockRecord record) {
        synchronized (entry) {
            boolean published = entry.publishWrite(target);
            if (published) {
                events.copyAdded(target, record);
            }
            return published;
        }
    }

    /** Drops a copy that failed its checksum, once no reader is left on it. */
    void dropCorrupt(CatalogEntry entry, TierId tierId) {
        events.checksumFailed(tierId, entry.key());
        log.warn("block {} failed its checksum in tier {}; that copy is dropped", entry.key(), tierId);
        drop(entry, tierId);
    }

    /**
     * Drops a copy a tier could not serve: one that failed its checksum (logged), or one the device could not
     * read back (the tier logs those, at most once a minute: a failing drive fails every read).
     */
    void dropBad(CatalogEntry entry, TierId tierId, BadCopyException why) {
        switch (why) {
            case ChecksumMismatchException corrupt -> dropCorrupt(entry, tierId);
            case UnreadableCopyException unreadable -> {
                events.readFailed(tierId, entry.key());
                drop(entry, tierId);
            }
        }
    }

    private void drop(CatalogEntry entry, TierId tierId) {
        BlockKey key = entry.key();
        BlockTier tier = stack.get(tierId);
        // A tier may have let go of the bad copy itself (NVMe drops one that fails its checksum or cannot be read).
        // While the bit is still set nothing writes the key there, so the policy forgets the old copy now, before a
        // new one can be recorded; the freeing after the readers leaves the policy alone when the copy is gone.
        if (!tier.contains(key)) {
            stack.policy(tierId).onRemove(key);
        }
        long copy;
        boolean dropped;
        synchronized (entry) { // ordered with the change, as in #publish
            // the copy the bit stands for, or none when the tier dropped it: the freeing frees that one only, not a
            // copy of the key written once the bit is cleared (see BlockTier#copyOf)
            copy = tier.copyOf(key);
            dropped = entry.dropTier(tierId);
            if (dropped) {
                if (copy != BlockTier.NO_COPY) {
                    // counts as being freed from the bit's clearing until it is free, so a store into the full tier
                    // waits for it (Mover#makeRoom)
                    slotsBeingFreed.begin(tierId);
                }
                events.copyRemoved(tierId, key, entry.length());
            }
        }
        if (!dropped) {
            catalog.removeIfDead(entry);
            return;
        }
        List<TierId> freeing = copy != BlockTier.NO_COPY ? List.of(tierId) : List.of();
        slotsBeingFreed.endWhenNoReaders(entry, freeing, () -> {
            stack.freeCopy(tierId, key, copy);
            catalog.removeIfDead(entry);
        });
    }

    /** What {@link #beginCopy} did. */
    enum CopyStart {
        /** The copy is registered; the caller ends it ({@link #endCopy}). */
        STARTED,
        /** The entry is deleted already: nothing is registered, nothing is to be copied. */
        DELETED,
        /**
         * Another copy of the block into the same tier is being written: nothing is registered; the caller waits for
         * it ({@link #awaitCopyEnded}) and looks again, or gives up.
         */
        BUSY
    }

    /** A copy of an entry's block into a tier, being written ({@link #beginCopy}). */
    private record CopyInto(CatalogEntry entry, TierId tier) {}

    /**
     * Registers a copy of the entry's block that a move or a write-through is about to write into tier {@code into}
     * (null: a move that copies nowhere, out of the slowest tier), before it writes. Nothing is registered when the
     * entry is deleted already, or when another copy of it into {@code into} is being written. The caller ends a
     * started copy ({@link #endCopy}) once it is recorded or, when a delete won, removed ({@link #removeUnrecorded}).
     *
     * <p>Why: a copy written into a durable tier is on disk before it is recorded, and a delete that wins in between
     * does not see it. The delete marks the entry dead, then waits for the copies registered ({@link #delete}); a
     * copy registers, then looks at the entry: one of the two sees the other.
     *
     * <p>Why one copy into a tier at a time: a tier skips a write of a key it already holds, so of two copies written
     * together (a demotion and a write-through of the block) one writes nothing, and cannot tell. When a delete then
     * lands between the other recording the copy and this one finishing, this one, finding its copy unrecorded,
     * would remove by key the copy the other recorded: the copy the delete frees only after its readers, freed
     * under them. With one copy at a time, a copy that a copier finds unrecorded is the one it wrote.
     */
    CopyStart beginCopy(CatalogEntry entry, @Nullable TierId into) {
        if (into != null && !copiesInto.add(new CopyInto(entry, into))) {
            return CopyStart.BUSY;
        }
        ownCopies.get().add(entry);
        copying.merge(entry, 1, Integer::sum);
        if (entry.dead()) {
            endCopy(entry, into);
            return CopyStart.DELETED;
        }
        return CopyStart.STARTED;
    }

    /** The copy registered by {@link #beginCopy} is recorded or removed. */
    void endCopy(CatalogEntry entry, @Nullable TierId into) {
        copying.computeIfPresent(entry, (e, n) -> n == 1 ? null : n - 1);
        ownCopies.get().remove(entry);
        if (into != null) {
            copiesInto.remove(new CopyInto(entry, into));
        }
    }

    /**
     * Waits until no copy of the entry's block into {@code into} is being written ({@link #beginCopy} answered
     * {@link CopyStart#BUSY}), or the entry is deleted. Moments: such a copy waits for no reader of the block. The
     * caller should not hold the block as a reader meanwhile: a demotion that finishes under a reader keeps the copy
     * it moved the block out of.
     */
    void awaitCopyEnded(CatalogEntry entry, TierId into) {
        CopyInto copy = new CopyInto(entry, into);
        SpinWait wait = null;
        while (copiesInto.contains(copy) && !entry.dead()) {
            if (wait == null) {
                wait = SpinWait.upTo(SpinWait.DEFAULT_NANOS);
            }
            wait.pause(
                    () -> "a copy of block " + entry.key() + " into tier " + into + " still being written after 30 s");
        }
    }

    /**
     * Removes a copy a delete kept from being recorded: out of the tier's index for good first (one synced write on
     * a durable tier), then its slot, so the delete waiting for it ({@link #beginCopy}) is durable when it returns.
     */
    static void removeUnrecorded(BlockTier tier, BlockKey key) {
        tier.forgetAtRestart(List.of(key));
        tier.delete(key);
    }

    /**
     * Removes the block from every tier; false when it was not held. Durable when this returns: a restart, even
     * after a crash, does not find the block, though its slots are freed only after its last reader. A copy of it
     * being written by a move or a write-through meanwhile is waited for (moments: it does not wait for readers).
     *
     * @throws BlockHeldException when the block is pinned or leased
     */
    boolean delete(BlockKey key) {
        Deleted deleted = dropAll(key);
        if (deleted == null) {
            return false;
        }
        finish(List.of(deleted));
        return !deleted.had().isEmpty();
    }

    /**
     * Makes the deletions durable, waits for the copies being written of them, then lets their entries go and
     * frees their slots after their readers (also when the waiting gave up: their counts must end).
     */
    private void finish(List<Deleted> deleted) {
        try {
            forgetAtRestart(deleted);
            awaitCopies(deleted);
        } finally {
            freeAfterReaders(deleted);
        }
    }

    /** Waits until no copy of these deleted blocks is being written ({@link #beginCopy}) but this thread's own. */
    private void awaitCopies(List<Deleted> deleted) {
        List<CatalogEntry> own = ownCopies.get();
        for (Deleted d : deleted) {
            CatalogEntry entry = d.entry();
            int mine = 0;
            for (CatalogEntry e : own) {
                mine += e == entry ? 1 : 0;
            }
            SpinWait wait = null;
            while (copying.getOrDefault(entry, 0) > mine) {
                if (wait == null) {
                    wait = SpinWait.upTo(SpinWait.DEFAULT_NANOS);
                }
                wait.pause(() -> "a copy of deleted block " + d.entry().key() + " still being written after 30 s");
            }
        }
    }

    /**
     * A block whose copies were dropped by a delete: per tier whose bit it cleared, the copy still to be freed
     * ({@link BlockTier#copyOf}; {@link BlockTier#NO_COPY} when the tier had dropped it itself).
     */
    private record Deleted(CatalogEntry entry, Map<TierId, Long> had) {

        /** The tiers that have a slot to free: not those that had dropped their copy themselves. */
        List<TierId> freeing() {
            List<TierId> tiers = new ArrayList<>(had.size());
            had.forEach((t, copy) -> {
                if (copy != BlockTier.NO_COPY) {
                    tiers.add(t);
                }
            });
            return tiers;
        }
    }

    /** Clears every tier bit of the block's entry; null when it has no entry. */
    private @Nullable Deleted dropAll(BlockKey key) {
        CatalogEntry entry = catalog.get(key);
        if (entry == null) {
            return null;
        }
        Map<TierId, Long> had = new EnumMap<>(TierId.class);
        synchronized (entry) { // ordered with the change, as in #publish
            Set<TierId> tiers = entry.dropAllUnlessHeld(); // checked with the drop: a lease taken meanwhile keeps it
            if (tiers == null) {
                throw new BlockHeldException("block " + key + " is pinned or leased and cannot be deleted");
            }
            // in the catalog until the deletion is durable (#finish): a reader dropping a copy the tier dropped
            // itself would let it go at once, and a put of the key would write a copy that the forgetting, by
            // key, then makes durable as deleted
            entry.keep();
            for (TierId t : tiers) {
                // the copy the bit stood for: the entry leaves the catalog only after this monitor, so no copy of a
                // new entry of the key is written yet (see #drop)
                long copy = stack.get(t).copyOf(key);
                had.put(t, copy);
                if (copy != BlockTier.NO_COPY) {
                    slotsBeingFreed.begin(t); // being freed until the last reader left, as in #drop
                }
                events.copyRemoved(t, key, entry.length());
            }
        }
        return new Deleted(entry, had);
    }

    /**
     * Makes the deletions durable before any of their slots is freed: the freeing waits for the blocks' readers,
     * and a durable tier that still names a block when the process dies would bring it back at the restart.
     */
    private void forgetAtRestart(List<Deleted> deleted) {
        for (BlockTier tier : stack.all()) {
            List<BlockKey> keys = new ArrayList<>();
            for (Deleted d : deleted) {
                if (d.had().containsKey(tier.id())) {
                    keys.add(d.entry().key());
                }
            }
            if (!keys.isEmpty()) {
                tier.forgetAtRestart(keys);
            }
        }
    }

    /** Frees each deleted block's slots once it has no reader left, without waiting for them. */
    private void freeAfterReaders(List<Deleted> deleted) {
        for (Deleted d : deleted) {
            BlockKey key = d.entry().key();
            d.entry().endRead(); // kept since #dropAll
            slotsBeingFreed.endWhenNoReaders(d.entry(), d.freeing(), () -> {
                d.had().forEach((t, copy) -> stack.freeCopy(t, key, copy));
                catalog.removeIfDead(d.entry());
            });
        }
    }

    /**
     * Removes every unpinned, unleased block of a namespace; returns how many were removed. The deletions are made
     * durable in batches, one write per durable tier each, not one per block.
     */
    int deleteNamespace(String namespace) {
        int removed = 0;
        List<Deleted> batch = new ArrayList<>();
        for (CatalogEntry entry : catalog.entries()) {
            if (entry.key().namespace().equals(namespace) && entry.pins() == 0 && entry.leases() == 0) {
                try {
                    Deleted deleted = dropAll(entry.key());
                    if (deleted != null) {
                        batch.add(deleted);
                        removed += deleted.had().isEmpty() ? 0 : 1;
                    }
                } catch (BlockHeldException leasedMeanwhile) {
                    // kept, as a block leased before the scan is
                }
                if (batch.size() == FORGET_BATCH) {
                    finish(batch);
                    batch.clear();
                }
            }
        }
        finish(batch);
        events.namespaceDeleted(namespace); // after the removals: a declaration made later applies after them
        return removed;
    }

    /** Resident blocks of {@code namespace} (pinned and leased ones included), by a scan of the catalog. */
    int namespaceBlockCount(String namespace) {
        int n = 0;
        for (CatalogEntry entry : catalog.entries()) {
            if (entry.key().namespace().equals(namespace) && entry.fastestTier() != null) {
                n++;
            }
        }
        return n;
    }

    static BlockRecord recordOf(CatalogEntry entry) {
        return new BlockRecord(entry.key(), entry.parent(), entry.length(), entry.crc32c());
    }
}
