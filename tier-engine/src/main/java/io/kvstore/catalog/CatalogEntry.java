package io.kvstore.catalog;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * What the catalog knows of one block: its parent, size and checksum, which tiers hold a readable copy,
 * and who holds it in place (pins, leases, readers in flight).
 *
 * <p>All state changes happen under the entry's own monitor and are short; there is no lock wider
 * than one block. A tier bit is set only after the tier holds the complete, checksummed bytes, and
 * cleared before the tier frees them, so a reader that saw the bit under the monitor and registered
 * as a reader can copy without further locking. An entry whose last tier bit is cleared is
 * {@code dead} and leaves the catalog; a writer that finds its entry dead starts over with a new one.
 */
public final class CatalogEntry {

    private final BlockKey key;
    private final @Nullable BlockHash parent;
    private final int length;
    private final int crc32c;
    private final long createdMillis;

    /** Written under the monitor, read without it on the lookup path. */
    private volatile int tiers;

    private int pins;
    private int leases;
    private int readers;
    private int moving;
    private boolean writing;
    private boolean dead;
    /** Frees of dropped copies that wait for the readers counted in {@link #readers}; null when none wait. */
    private @Nullable List<Runnable> afterLastReader;
    // Advisory access statistics: written racily without fences (a lost update only blurs them).
    private long lastAccessMillis;
    private long accessCount;

    public CatalogEntry(BlockKey key, @Nullable BlockHash parent, int length, int crc32c, long nowMillis) {
        this.key = key;
        this.parent = parent;
        this.length = length;
        this.crc32c = crc32c;
        this.createdMillis = nowMillis;
        this.lastAccessMillis = nowMillis;
    }

    public BlockKey key() {
        return key;
    }

    /** The parent's hash, or null for the first block of a prompt. */
    public @Nullable BlockHash parent() {
        return parent;
    }

    /** The parent's key in the same namespace, or null. */
    public @Nullable BlockKey parentKey() {
        return parent == null ? null : new BlockKey(key.namespace(), parent);
    }

    public int length() {
        return length;
    }

    public int crc32c() {
        return crc32c;
    }

    public long createdMillis() {
        return createdMillis;
    }

    public long lastAccessMillis() {
        return lastAccessMillis;
    }

    public long accessCount() {
        return accessCount;
    }

    void touch(long nowMillis) {
        if (lastAccessMillis != nowMillis) {
            lastAccessMillis = nowMillis;
        }
        accessCount++;
    }

    public boolean resident() {
        return tiers != 0;
    }

    public boolean residentIn(TierId tier) {
        return (tiers & bit(tier)) != 0;
    }

    private static final TierId[] TIERS = TierId.values();

    /** The fastest tier holding a copy, or null. */
    public @Nullable TierId fastestTier() {
        int mask = tiers;
        return mask == 0 ? null : TIERS[Integer.numberOfTrailingZeros(mask)];
    }

    public Set<TierId> tiers() {
        int mask = tiers;
        EnumSet<TierId> set = EnumSet.noneOf(TierId.class);
        for (TierId t : TIERS) {
            if ((mask & bit(t)) != 0) {
                set.add(t);
            }
        }
        return set;
    }

    public synchronized int pins() {
        return pins;
    }

    public synchronized int leases() {
        return leases;
    }

    public synchronized boolean dead() {
        return dead;
    }

    /** The answer to {@link #claimWrite}. */
    public enum WriteClaim {
        /** The caller is the block's only writer until it publishes or abandons. */
        OWNED,
        /** A tier already holds the block. */
        RESIDENT,
        /** Another writer is storing it now. */
        BUSY,
        /** The entry is being removed; look the key up again. */
        DEAD
    }

    /**
     * Claims the right to store the block's first copy. One writer per entry means a copy that fails to
     * publish has exactly one owner to remove it.
     */
    public synchronized WriteClaim claimWrite() {
        if (dead) {
            return WriteClaim.DEAD;
        }
        if (tiers != 0) {
            return WriteClaim.RESIDENT;
        }
        if (writing) {
            return WriteClaim.BUSY;
        }
        writing = true;
        return WriteClaim.OWNED;
    }

    /**
     * Publishes the claimed writer's copy in {@code tier}; false when the entry died meanwhile, in which
     * case the writer removes its copy.
     */
    public synchronized boolean publishWrite(TierId tier) {
        writing = false;
        if (dead) {
            return false;
        }
        tiers |= bit(tier);
        return true;
    }

    /** Gives up a claimed write that stored nothing. */
    public synchronized void abandonWrite() {
        writing = false;
    }

    /** Makes the copy in {@code tier} visible; false when the entry died meanwhile (the caller retries). */
    public synchronized boolean addTier(TierId tier) {
        if (dead) {
            return false;
        }
        tiers |= bit(tier);
        return true;
    }

    /**
     * Registers a reader of the fastest tier holding the block, at or below {@code from}.
     *
     * @return that tier, or null when no tier holds it
     */
    public synchronized @Nullable TierId beginRead(TierId from) {
        int mask = tiers & ~((1 << from.ordinal()) - 1);
        if (mask == 0) {
            return null;
        }
        readers++;
        return TierId.values()[Integer.numberOfTrailingZeros(mask)];
    }

    public synchronized void endRead() {
        readerLeft();
    }

    /**
     * Runs {@code free} (the freeing of slots whose tier bits are already cleared) once the block has no reader:
     * at once, on this thread, when it has none now; otherwise on a thread of its own the moment the last reader
     * leaves ({@link #endRead}, or a move ending). Never waits, so a mover or a request that drops a copy a slow
     * client still reads goes on at once, and the slot is neither freed under that client nor kept after it.
     * Readers that begin later cannot reach the dropped copy (its bit is cleared), but are waited for as well.
     * Call it outside this entry's monitor: {@code free} may take a policy's lock, which is taken before it.
     */
    public void whenNoReaders(Runnable free) {
        synchronized (this) {
            if (readers > 0) {
                if (afterLastReader == null) {
                    afterLastReader = new ArrayList<>(1);
                }
                afterLastReader.add(free);
                return;
            }
        }
        free.run();
    }

    /**
     * One reader (or move) less; the last one hands the frees waiting for it to a thread of its own, since it may
     * hold this monitor (a move's end) and a free takes a policy's lock.
     */
    private void readerLeft() {
        readers--;
        List<Runnable> frees = afterLastReader;
        if (readers == 0 && frees != null) {
            afterLastReader = null;
            Thread.ofVirtual().name("kvstore-free-after-readers").start(() -> frees.forEach(Runnable::run));
        }
    }

    /** Whether eviction may move the block out of {@code tier} now. */
    public synchronized boolean evictableFrom(TierId tier) {
        return (tiers & bit(tier)) != 0 && pins == 0 && leases == 0 && readers == 0 && moving == 0;
    }

    /**
     * Whether the block sits in {@code tier} held only by readers or a mover, not by a pin or lease: its slot
     * frees itself, or it becomes evictable, within moments.
     */
    public synchronized boolean heldBrieflyIn(TierId tier) {
        return (tiers & bit(tier)) != 0 && pins == 0 && leases == 0 && (readers > 0 || moving > 0);
    }

    /**
     * Claims the block for moving out of {@code tier}: it must be evictable; the mover counts as a reader
     * of that tier until {@link #finishMove}.
     */
    public synchronized boolean claimMove(TierId tier) {
        if (!evictableFrom(tier)) {
            return false;
        }
        moving++;
        readers++;
        return true;
    }

    /**
     * Counts a reader that keeps the entry in the catalog ({@link #dieIfEmpty}) until its {@link #endRead}: a delete
     * that cleared the bits and has yet to make that durable, while no new entry of the key may write a copy.
     */
    public synchronized void keep() {
        readers++;
    }

    /** Gives up a claimed move without changing where the block is. */
    public synchronized void abortMove() {
        moving--;
        readerLeft();
    }

    /** What {@link #finishMove} did. */
    public record MoveOutcome(boolean clearedFrom, boolean recordedCopy) {}

    /**
     * Ends a move out of {@code from}: records the copy in {@code copiedTo} (may be null) and drops
     * {@code from} unless someone pinned, leased or began reading the block meanwhile. Whoever clears a
     * tier's bit owns freeing that tier's slot: when {@code clearedFrom} is true the mover does. When the
     * entry died meanwhile (a delete cleared every bit) nothing is recorded, and the copy the mover made
     * is the mover's to free.
     */
    public synchronized MoveOutcome finishMove(TierId from, @Nullable TierId copiedTo) {
        moving--;
        readerLeft();
        if (dead) {
            return new MoveOutcome(false, false);
        }
        if (copiedTo != null) {
            tiers |= bit(copiedTo);
        }
        if (pins > 0 || leases > 0 || readers > 0) {
            return new MoveOutcome(false, copiedTo != null);
        }
        // a copy dropped meanwhile (failed its checksum under a reader) was cleared, and is freed, by its dropper
        boolean had = (tiers & bit(from)) != 0;
        tiers &= ~bit(from);
        if (tiers == 0) {
            dead = true;
        }
        return new MoveOutcome(had, copiedTo != null);
    }

    /**
     * Drops the copy in {@code tier} at once (a failed checksum, a delete). Readers already copying keep
     * reading; the caller frees the slot after them ({@link #whenNoReaders}). An entry left without a copy
     * while a move is in flight does not die here: the move may be about to record the copy it made below
     * ({@link #finishMove} decides then).
     *
     * @return true when the tier held it
     */
    public synchronized boolean dropTier(TierId tier) {
        boolean had = (tiers & bit(tier)) != 0;
        tiers &= ~bit(tier);
        if (tiers == 0 && moving == 0) {
            dead = true;
        }
        return had;
    }

    /** Drops every tier unless the block is pinned or leased (null then), as one step with those checks. */
    public synchronized @Nullable Set<TierId> dropAllUnlessHeld() {
        return pins > 0 || leases > 0 ? null : dropAll();
    }

    /** Drops every tier; the entry is dead afterwards. Returns the tiers it was in. */
    public synchronized Set<TierId> dropAll() {
        Set<TierId> had = tiers();
        tiers = 0;
        dead = true;
        return had;
    }

    public synchronized int readers() {
        return readers;
    }

    /** Whether a pin or lease holds the block in place (readers and moves hold it only briefly). */
    public synchronized boolean held() {
        return pins > 0 || leases > 0;
    }

    public synchronized boolean pin() {
        if (tiers == 0) {
            return false;
        }
        pins++;
        return true;
    }

    public synchronized boolean unpin() {
        if (pins == 0) {
            return false;
        }
        pins--;
        return true;
    }

    public synchronized boolean lease() {
        if (tiers == 0) {
            return false;
        }
        leases++;
        return true;
    }

    public synchronized void release() {
        if (leases > 0) {
            leases--;
        }
    }

    /**
     * Marks a block with no copy left dead and says whether it may leave the catalog now: only when no
     * writer, mover or reader of this entry is still in flight, since each of them may hold a copy it has
     * yet to publish or free. Removing the entry earlier would let a new entry of the same key write a
     * tier while an old copy is still being written or freed there. The last of them removes it. A move in
     * flight may still record its copy below (see {@link #dropTier}), so the entry does not die under it.
     */
    public synchronized boolean dieIfEmpty() {
        if (tiers == 0 && !writing && moving == 0) {
            dead = true;
        }
        return dead && !writing && moving == 0 && readers == 0;
    }

    private static int bit(TierId tier) {
        return 1 << tier.ordinal();
    }
}
