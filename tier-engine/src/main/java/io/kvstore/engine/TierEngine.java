package io.kvstore.engine;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.catalog.Catalog;
import io.kvstore.catalog.CatalogEntry;
import io.kvstore.catalog.LookupResult;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.eviction.TierPolicy;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block manager: stores, finds and returns blocks across the configured tiers, moving them down
 * when a tier passes its high watermark and up on a hit where a tier asks for it.
 *
 * <p>Ownership: each {@link BlockTier} owns its bytes, the {@link Catalog} owns which tiers hold a
 * readable copy, each {@link TierPolicy} owns the order of eviction. A block becomes visible only after
 * its bytes are complete in a tier (tier write, then catalog bit), and a tier frees a slot only after
 * the bit is cleared and no reader is left, so a lookup or read never sees a half-written or reused
 * slot. Every read is checked against the CRC32C taken when the block was stored; a copy that fails is
 * dropped and the next slower copy, if any, is served.
 */
public final class TierEngine implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(TierEngine.class);
    private static final long READER_WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** How long a write into a full tier waits for readers and demotions to let go of slots. */
    private static final long ROOM_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private static final long ROOM_POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    /** From this many bytes in one commit its checksums run on several cores. */
    private static final long PARALLEL_CHECKSUM_BYTES = 1L << 20;
    /** Blocks demoted to NVMe per group commit. */
    private static final int DEMOTION_BATCH = 32;

    private final TreeMap<TierId, BlockTier> tiers = new TreeMap<>();
    private final EnumMap<TierId, TierPolicy> policies = new EnumMap<>(TierId.class);
    private final Map<TierId, TierSettings> settings = new ConcurrentHashMap<>();
    private final EnumMap<TierId, AtomicBoolean> demotionQueued = new EnumMap<>(TierId.class);
    private final Catalog catalog;
    private final EngineEvents events;
    private final Clock clock;
    private final Duration defaultLeaseTimeout;
    private final Map<String, Lease> leases = new ConcurrentHashMap<>();
    private final Map<String, Reservation> reservations = new ConcurrentHashMap<>();
    private final Set<BlockKey> promotionsQueued = ConcurrentHashMap.newKeySet();
    private final Set<String> writeThrough = ConcurrentHashMap.newKeySet();
    private final ExecutorService mover;
    private final java.util.concurrent.atomic.AtomicInteger pendingMoves =
            new java.util.concurrent.atomic.AtomicInteger();
    private final ScheduledExecutorService leaseSweeper;

    /**
     * @param tierSettings settings per tier; tiers without an entry use {@link TierSettings#DEFAULT}
     * @param defaultLeaseTimeout how long a lease holds blocks when the caller names no timeout
     */
    public TierEngine(
            Collection<? extends BlockTier> tierList,
            Map<TierId, TierSettings> tierSettings,
            Duration defaultLeaseTimeout,
            EngineEvents events,
            Clock clock) {
        if (tierList.isEmpty()) {
            throw new IllegalArgumentException("at least one tier is required");
        }
        for (BlockTier tier : tierList) {
            if (tiers.put(tier.id(), tier) != null) {
                throw new IllegalArgumentException("tier " + tier.id() + " configured twice");
            }
        }
        this.clock = clock;
        this.events = events;
        this.defaultLeaseTimeout = defaultLeaseTimeout;
        this.catalog = new Catalog(clock::millis);
        Function<BlockKey, BlockKey> parentOf = key -> {
            CatalogEntry entry = catalog.get(key);
            return entry == null ? null : entry.parentKey();
        };
        for (TierId id : tiers.keySet()) {
            TierSettings s = tierSettings.getOrDefault(id, TierSettings.DEFAULT);
            settings.put(id, s);
            policies.put(id, new TierPolicy(s.policy(), parentOf));
            demotionQueued.put(id, new AtomicBoolean());
        }
        this.mover = Executors.newSingleThreadExecutor(
                Thread.ofPlatform().name("kvstore-mover").daemon().factory());
        this.leaseSweeper = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("kvstore-lease-sweeper").daemon().factory());
        recover();
        long sweepMillis = Math.max(50, Math.min(1000, defaultLeaseTimeout.toMillis() / 4));
        leaseSweeper.scheduleWithFixedDelay(
                this::expireLeasesAndReservations, sweepMillis, sweepMillis, TimeUnit.MILLISECONDS);
    }

    private void recover() {
        for (BlockTier tier : tiers.values()) {
            List<BlockRecord> records = tier.recovered();
            for (BlockRecord r : records) {
                CatalogEntry entry = catalog.entryFor(r.key(), r.parent(), r.length(), r.crc32c());
                entry.addTier(tier.id());
                events.copyAdded(tier.id(), r);
                policies.get(tier.id()).onInsert(r.key(), entry.parentKey());
            }
            if (!records.isEmpty()) {
                log.info("tier {}: {} blocks back in the catalog after restart", tier.id(), records.size());
            }
        }
    }

    /** The entry died while a copy was being written; the caller starts over or gives up. */
    private static final class StaleEntryException extends RuntimeException {
        StaleEntryException(BlockKey key) {
            super("block " + key + " was removed while a copy was being written", null, false, false);
        }
    }

    // ---- lookup -------------------------------------------------------------------------------

    /** The longest cached prefix of {@code hashes} in {@code namespace}, with each block's fastest tier. */
    public LookupResult lookup(String namespace, List<BlockHash> hashes) {
        LookupResult result = catalog.lookup(namespace, hashes);
        // one policy call per run of blocks in the same tier (usually the whole prefix), not one per block
        int runStart = 0;
        for (int i = 1; i <= result.matchedBlocks(); i++) {
            if (i == result.matchedBlocks()
                    || result.tiers().get(i) != result.tiers().get(runStart)) {
                policies.get(result.tiers().get(runStart))
                        .recordAccesses(result.blocks().subList(runStart, i));
                runStart = i;
            }
        }
        return result;
    }

    public CatalogEntry entry(BlockKey key) {
        return catalog.get(key);
    }

    // ---- store --------------------------------------------------------------------------------

    /** Stores a block in the fastest configured tier. */
    public TierId put(BlockKey key, BlockHash parent, MemorySegment bytes) throws IOException {
        return put(key, parent, bytes, tiers.firstKey());
    }

    /**
     * Stores {@code bytes} under {@code key} in {@code target}, evicting by policy to make room. Storing a
     * key that is already resident is a no-op returning the tier that holds it.
     *
     * @throws TierFullException when nothing more can be evicted (everything pinned, leased or being read)
     */
    public TierId put(BlockKey key, BlockHash parent, MemorySegment bytes, TierId target) throws IOException {
        BlockTier tier = tier(target);
        if (bytes.byteSize() <= 0 || bytes.byteSize() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("block " + key + " has " + bytes.byteSize() + " bytes");
        }
        int crc = Checksums.crc32c(bytes);
        return store(
                        key,
                        parent,
                        (int) bytes.byteSize(),
                        crc,
                        tier,
                        (entry, record) -> writeWithRoom(tier, entry, record, bytes))
                .tier();
    }

    /** How {@link #store} puts the first copy of a block into its tier. */
    @FunctionalInterface
    private interface FirstCopy {
        void write(CatalogEntry entry, BlockRecord record) throws IOException;
    }

    /** Where a stored block is, and whether this store made the copy (false: it was already resident). */
    private record Stored(TierId tier, boolean copied) {}

    /**
     * The one way a block becomes resident: claim the entry as its only writer, make the first copy,
     * publish it. A key already resident is left as it is (same bytes required).
     */
    private Stored store(BlockKey key, BlockHash parent, int length, int crc, BlockTier tier, FirstCopy firstCopy)
            throws IOException {
        TierId target = tier.id();
        long deadline = System.nanoTime() + READER_WAIT_NANOS;
        while (true) {
            CatalogEntry entry = catalog.entryFor(key, parent, length, crc);
            switch (entry.claimWrite()) {
                case RESIDENT -> {
                    TierId holder = entry.fastestTier();
                    if (holder == null) {
                        continue;
                    }
                    if (entry.length() != length || entry.crc32c() != crc) {
                        throw new IllegalArgumentException("block " + key + " is already stored with different bytes ("
                                + entry.length() + " bytes, crc " + Integer.toHexString(entry.crc32c()) + ")");
                    }
                    return new Stored(holder, false);
                }
                case BUSY, DEAD -> {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException(
                                "block " + key + " is busy: another store of it has not finished in 30 s");
                    }
                    Thread.onSpinWait();
                    Thread.yield();
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
            if (entry.publishWrite(target)) {
                events.copyAdded(target, record);
                policies.get(target).onInsert(key, entry.parentKey());
                TierId durable = tiers.lastKey();
                if (durable != target && writeThrough.contains(key.namespace())) {
                    try {
                        copyThrough(entry, target, durable);
                    } catch (BlockNotFoundException deletedMeanwhile) {
                        // a delete that came after this store won; nothing is left to copy through
                    }
                }
                afterInsert(target);
                return new Stored(target, true);
            }
            // The entry was deleted while we wrote; our copy is ours alone to remove, and the entry leaves
            // the catalog only now, so a new entry of this key cannot meet our copy.
            tier.delete(key);
            catalog.removeIfDead(entry);
        }
    }

    /**
     * Writes a copy of {@code entry}'s block into {@code tier}, evicting by policy to make room. A tier
     * may still hold an old slot of the same key whose bit was cleared but which its owner has not freed
     * yet; writing then would find that slot and skip, and the owner would free it under us, so we wait
     * the few microseconds until it is gone.
     */
    private void writeWithRoom(BlockTier tier, CatalogEntry entry, BlockRecord record, MemorySegment bytes)
            throws IOException {
        awaitOldCopyFreed(tier, entry, record.key());
        long start = System.nanoTime();
        while (true) {
            try {
                tier.write(record, bytes);
                return;
            } catch (TierFullException full) {
                makeRoom(tier.id(), record.length(), full, start);
            }
        }
    }

    /**
     * Frees room in a full tier for a waiting write: evicts one block when one is evictable; otherwise, while
     * some block is held only by a reader or an in-flight move (a demotion frees its slot within moments),
     * waits a little so the caller can try again. Writers thus queue behind the demoter instead of failing.
     *
     * @throws TierFullException {@code full}, when everything left is pinned or leased, or no room came
     *     within {@link #ROOM_WAIT_NANOS} of {@code startNanos}
     */
    private void makeRoom(TierId id, int length, TierFullException full, long startNanos) throws TierFullException {
        if (evictOne(id, length)) {
            return;
        }
        boolean transientHold = policies.get(id).nextVictim(k -> {
                    CatalogEntry e = catalog.get(k);
                    return e != null && e.heldBrieflyIn(id);
                })
                != null;
        if (!transientHold || System.nanoTime() - startNanos > ROOM_WAIT_NANOS) {
            throw full;
        }
        LockSupport.parkNanos(ROOM_POLL_NANOS);
    }

    /** Waits until {@code tier} no longer holds a copy of the key that {@code entry} has not published. */
    private static void awaitOldCopyFreed(BlockTier tier, CatalogEntry entry, BlockKey key) {
        long deadline = 0;
        while (tier.contains(key) && !entry.residentIn(tier.id())) {
            if (entry.dead()) {
                throw new StaleEntryException(key);
            }
            if (deadline == 0) {
                deadline = System.nanoTime() + READER_WAIT_NANOS;
            } else if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "tier " + tier.id() + " still holds an unpublished copy of " + key + " after 30 s");
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }

    private void afterInsert(TierId id) {
        BlockTier tier = tiers.get(id);
        TierSettings s = settings.get(id);
        if (tier.usedBytes() > s.highWatermark() * tier.capacityBytes()
                && demotionQueued.get(id).compareAndSet(false, true)) {
            submitMove(() -> {
                demotionQueued.get(id).set(false);
                demoteToLowWatermark(id);
            });
        }
    }

    /**
     * Moves blocks out of {@code id} by policy until it is at or below its low watermark. From a memory
     * tier into the NVMe tier the victims move in batches, one group commit each, instead of paying a
     * data sync and an index sync per block.
     */
    public void demoteToLowWatermark(TierId id) {
        BlockTier tier = tiers.get(id);
        TierId below = configuredBelow(id);
        boolean batched = tier instanceof MemoryTier && below != null && tiers.get(below) instanceof NvmeTier;
        int budget = tier.blockCount() * 2 + 16;
        while (budget > 0) {
            long excess = tier.usedBytes() - (long) (settings.get(id).lowWatermark() * tier.capacityBytes());
            if (excess <= 0) {
                break;
            }
            int moved = batched ? demoteBatch(id, below, excess) : 0;
            if (moved == 0) {
                if (!evictOne(id, 0)) {
                    break;
                }
                moved = 1;
            }
            budget -= moved;
        }
    }

    /**
     * Claims up to {@link #DEMOTION_BATCH} victims worth about {@code excessBytes}, writes them to the
     * NVMe tier in one batch, then finishes each move as {@link #moveOut} does.
     *
     * @return how many victims were handled; 0 when none could be claimed or the batch write failed (the
     *     caller then falls back to one block at a time, which also makes room in the NVMe tier)
     */
    private int demoteBatch(TierId id, TierId below, long excessBytes) {
        MemoryTier from = (MemoryTier) tiers.get(id);
        NvmeTier to = (NvmeTier) tiers.get(below);
        TierPolicy policy = policies.get(id);
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
                // an older copy in NVMe is still being freed by its owner; leave this block for later
                entry.abortMove();
                continue;
            }
            claimed.add(entry);
            bytes += entry.length();
        }
        if (claimed.isEmpty()) {
            return 0;
        }
        List<BlockRecord> records = new ArrayList<>();
        List<MemorySegment> sources = new ArrayList<>();
        List<CatalogEntry> copied = new ArrayList<>();
        List<CatalogEntry> corrupt = new ArrayList<>();
        long copiedBytes = 0;
        for (CatalogEntry entry : claimed) {
            if (entry.residentIn(below)) {
                continue;
            }
            try {
                sources.add(from.verifiedView(entry.key()));
                records.add(new BlockRecord(entry.key(), entry.parent(), entry.length(), entry.crc32c()));
                copied.add(entry);
                copiedBytes += entry.length();
            } catch (IOException failedChecksum) {
                corrupt.add(entry);
            }
        }
        long start = System.nanoTime();
        try {
            to.writeAll(records, sources);
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
        for (CatalogEntry entry : claimed) {
            BlockKey key = entry.key();
            boolean newCopy = copied.contains(entry);
            boolean droppedCorrupt = false;
            if (corrupt.contains(entry)) {
                droppedCorrupt = entry.dropTier(id);
                if (droppedCorrupt) {
                    events.copyRemoved(id, key, entry.length());
                }
                events.checksumFailed(id, key);
                log.warn("dropped corrupt copy of {} in tier {} during demotion", key, id);
            }
            CatalogEntry.MoveOutcome outcome = entry.finishMove(id, droppedCorrupt ? null : below);
            if (newCopy && !outcome.recordedCopy()) {
                to.delete(key);
                newCopy = false;
            }
            if (newCopy) {
                policies.get(below).onInsert(key, entry.parentKey());
                events.copyAdded(below, recordOf(entry));
                events.demoted(id, below, entry.length());
            }
            if (outcome.clearedFrom()) {
                events.copyRemoved(id, key, entry.length());
            }
            if (outcome.clearedFrom() || droppedCorrupt) {
                policy.onRemove(key);
                from.delete(key);
                events.evicted(id, policy.kind(), entry.length());
                catalog.removeIfDead(entry);
            }
        }
        afterInsert(below);
        return claimed.size();
    }

    // ---- eviction and demotion ----------------------------------------------------------------

    /**
     * Moves one block out of {@code id} by its policy: down to the next configured tier when there is
     * one, else dropped. Blocks of {@code preferLength} go first, so the freed slot fits the waiting put.
     *
     * @return false when no block can be evicted
     */
    private boolean evictOne(TierId id, int preferLength) {
        TierPolicy policy = policies.get(id);
        BlockKey victim =
                preferLength > 0 ? policy.nextVictim(k -> evictable(k, id) && lengthOf(k) == preferLength) : null;
        if (victim == null) {
            victim = policy.nextVictim(k -> evictable(k, id));
        }
        if (victim == null) {
            return false;
        }
        moveOut(id, victim);
        return true;
    }

    /**
     * Moves {@code victim} out of tier {@code id}: copied down to the next configured tier when there is
     * one (and it is not there already), then its slot in {@code id} is freed, unless someone pinned,
     * leased or began reading it meanwhile, in which case both copies stay.
     */
    private void moveOut(TierId id, BlockKey victim) {
        TierPolicy policy = policies.get(id);
        CatalogEntry entry = catalog.get(victim);
        if (entry == null || !entry.residentIn(id)) {
            policy.onRemove(victim);
            return;
        }
        if (!entry.claimMove(id)) {
            return;
        }
        TierId below = configuredBelow(id);
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
        } catch (StaleEntryException deleted) {
            // a delete removed the block while we copied it; finishMove below sees it dead
        } catch (ChecksumMismatchException corrupt) {
            droppedCorrupt = entry.dropTier(id);
            if (droppedCorrupt) {
                events.copyRemoved(id, victim, entry.length());
            }
            events.checksumFailed(id, victim);
            log.warn("dropped corrupt copy of {} in tier {} during demotion", victim, id);
        } catch (IOException | RuntimeException e) {
            log.warn(
                    "could not demote {} from {} to {}: {}; dropping it from {}",
                    victim,
                    id,
                    below,
                    e.getMessage(),
                    id);
        }
        CatalogEntry.MoveOutcome outcome = entry.finishMove(id, copiedTo);
        boolean freed = outcome.clearedFrom() || droppedCorrupt;
        if (newCopy && !outcome.recordedCopy()) {
            // a delete won the race: the copy we just made belongs to nobody
            tiers.get(below).delete(victim);
            newCopy = false;
        }
        if (newCopy) {
            policies.get(below).onInsert(victim, entry.parentKey());
            events.copyAdded(below, recordOf(entry));
            events.demoted(id, below, entry.length());
        }
        if (outcome.clearedFrom()) {
            events.copyRemoved(id, victim, entry.length());
        }
        if (freed) {
            // policy first: a promotion may put a new copy here the moment the slot is free
            policy.onRemove(victim);
            tiers.get(id).delete(victim);
            events.evicted(id, policy.kind(), entry.length());
            catalog.removeIfDead(entry);
        }
        if (newCopy) {
            afterInsert(below);
        }
    }

    private boolean evictable(BlockKey key, TierId id) {
        CatalogEntry entry = catalog.get(key);
        return entry == null || entry.evictableFrom(id);
    }

    private int lengthOf(BlockKey key) {
        CatalogEntry entry = catalog.get(key);
        return entry == null ? -1 : entry.length();
    }

    private void copyDown(CatalogEntry entry, TierId from, TierId to) throws IOException {
        BlockRecord record = new BlockRecord(entry.key(), entry.parent(), entry.length(), entry.crc32c());
        long start = System.nanoTime();
        if (tiers.get(from) instanceof MemoryTier memory) {
            writeWithRoom(tiers.get(to), entry, record, memory.verifiedView(entry.key()));
        } else {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buffer = arena.allocate(entry.length(), 4096);
                tiers.get(from).read(entry.key(), buffer);
                writeWithRoom(tiers.get(to), entry, record, buffer);
            }
        }
        events.moved(from, to, entry.length(), System.nanoTime() - start);
    }

    private static BlockRecord recordOf(CatalogEntry entry) {
        return new BlockRecord(entry.key(), entry.parent(), entry.length(), entry.crc32c());
    }

    private TierId configuredBelow(TierId id) {
        return tiers.higherKey(id);
    }

    private TierId configuredAbove(TierId id) {
        return tiers.lowerKey(id);
    }

    /**
     * Evicts from {@code id} by policy until {@code maxBlocks} blocks or {@code maxBytes} bytes have left
     * (whichever comes first; a non-positive limit is no limit, and with neither limit one block goes),
     * moving them down where a tier is below.
     */
    public EvictionReport evict(TierId id, long maxBytes, int maxBlocks) {
        if (maxBlocks <= 0 && maxBytes <= 0) {
            maxBlocks = 1;
        }
        return evictWhile(
                id,
                k -> true,
                maxBytes <= 0 ? Long.MAX_VALUE : maxBytes,
                maxBlocks <= 0 ? Integer.MAX_VALUE : maxBlocks);
    }

    /** Evicts every evictable block of {@code namespace} from tier {@code id}, moving them down. */
    public EvictionReport evictNamespace(TierId id, String namespace) {
        return evictWhile(id, k -> k.namespace().equals(namespace), Long.MAX_VALUE, Integer.MAX_VALUE);
    }

    /**
     * Moves the policy's next evictable victim among {@code which} out of tier {@code id} until the limits
     * are reached or none is left; bounded by twice the tier's block count, so concurrent stores cannot
     * keep it running. Counts what actually left the tier.
     */
    private EvictionReport evictWhile(
            TierId id, java.util.function.Predicate<BlockKey> which, long maxBytes, int maxBlocks) {
        BlockTier tier = tier(id);
        TierPolicy policy = policies.get(id);
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

    // ---- read ---------------------------------------------------------------------------------

    /**
     * Copies the block into {@code dst} from the fastest tier holding a good copy.
     *
     * @return the block's record (its length is the number of bytes written to {@code dst})
     * @throws BlockNotFoundException when no tier holds a good copy
     */
    public BlockRecord get(BlockKey key, MemorySegment dst) throws IOException {
        return read(
                key,
                (tier, record, view) -> {
                    MemorySegment.copy(view, 0, dst, 0, record.length());
                    return record;
                },
                dst);
    }

    /** Receives a block's verified bytes; the view is valid only during the call. */
    @FunctionalInterface
    public interface BlockReader<T> {
        T read(TierId tier, BlockRecord record, MemorySegment bytes) throws IOException;
    }

    /**
     * Hands the block's verified bytes to {@code reader} without copying when the block is in a memory
     * tier (the slot stays held for the call); from slower tiers it is read into a temporary buffer.
     */
    public <T> T read(BlockKey key, BlockReader<T> reader) throws IOException {
        return read(key, reader, null);
    }

    private <T> T read(BlockKey key, BlockReader<T> reader, MemorySegment dst) throws IOException {
        CatalogEntry entry = catalog.get(key);
        if (entry == null) {
            throw new BlockNotFoundException("no block " + key);
        }
        return read(entry, reader, dst);
    }

    /**
     * Reads through this very entry, not whatever the catalog maps its key to now: a mover holding an
     * older entry must register as that entry's reader, so a delete of it waits for the mover.
     */
    private <T> T read(CatalogEntry entry, BlockReader<T> reader, MemorySegment dst) throws IOException {
        BlockKey key = entry.key();
        TierId from = tiers.firstKey();
        while (true) {
            TierId tierId = entry.beginRead(from);
            if (tierId == null) {
                throw new BlockNotFoundException("no good copy of block " + key + " is left");
            }
            BlockTier tier = tiers.get(tierId);
            boolean held = true;
            try {
                BlockRecord record = new BlockRecord(key, entry.parent(), entry.length(), entry.crc32c());
                T result;
                if (tier instanceof MemoryTier memory) {
                    result = reader.read(tierId, record, memory.verifiedView(key));
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
                policies.get(tierId).recordAccess(key);
                maybePromote(entry, tierId);
                return result;
            } catch (ChecksumMismatchException corrupt) {
                entry.endRead();
                held = false;
                dropCorrupt(entry, tierId);
                TierId next = configuredBelow(tierId);
                if (next == null) {
                    throw corrupt;
                }
                from = next;
            } finally {
                if (held) {
                    entry.endRead();
                }
            }
        }
    }

    private void dropCorrupt(CatalogEntry entry, TierId tierId) {
        events.checksumFailed(tierId, entry.key());
        log.warn("block {} failed its checksum in tier {}; that copy is dropped", entry.key(), tierId);
        if (entry.dropTier(tierId)) {
            events.copyRemoved(tierId, entry.key(), entry.length());
            awaitNoReaders(entry);
            policies.get(tierId).onRemove(entry.key());
            tiers.get(tierId).delete(entry.key());
        }
        catalog.removeIfDead(entry);
    }

    private void maybePromote(CatalogEntry entry, TierId hitTier) {
        TierId above = configuredAbove(hitTier);
        if (above == null || !settings.get(above).promoteOnHit() || !promotionsQueued.add(entry.key())) {
            return;
        }
        submitMove(() -> {
            try {
                promote(entry, hitTier, above);
            } catch (IOException | RuntimeException e) {
                log.debug("promotion of {} to {} skipped: {}", entry.key(), above, e.getMessage());
            } finally {
                promotionsQueued.remove(entry.key());
            }
        });
    }

    /**
     * Write-through: copies a just-stored block to the slowest (durable) tier before the put returns,
     * holding it as a reader so a concurrent delete waits for the copy to be published or removed.
     */
    private void copyThrough(CatalogEntry entry, TierId from, TierId to) throws IOException {
        BlockRecord record = new BlockRecord(entry.key(), entry.parent(), entry.length(), entry.crc32c());
        long start = System.nanoTime();
        read(
                entry,
                (tier, rec, bytes) -> {
                    if (entry.residentIn(to)) {
                        return null;
                    }
                    writeWithRoom(tiers.get(to), entry, record, bytes);
                    if (entry.addTier(to)) {
                        policies.get(to).onInsert(entry.key(), entry.parentKey());
                        events.copyAdded(to, record);
                        events.moved(from, to, entry.length(), System.nanoTime() - start);
                    } else {
                        tiers.get(to).delete(entry.key());
                    }
                    return null;
                },
                null);
    }

    /**
     * Chooses write-back (the default: blocks reach the slowest tier when they are demoted) or
     * write-through (every put also writes the slowest tier before it returns) for a namespace.
     */
    public void setWriteThrough(String namespace, boolean enabled) {
        if (enabled) {
            writeThrough.add(namespace);
        } else {
            writeThrough.remove(namespace);
        }
    }

    private void promote(CatalogEntry entry, TierId from, TierId to) throws IOException {
        if (entry.residentIn(to) || entry.dead()) {
            return;
        }
        BlockRecord record = new BlockRecord(entry.key(), entry.parent(), entry.length(), entry.crc32c());
        long start = System.nanoTime();
        // Everything happens while the read holds the block: a concurrent delete waits for us, so the
        // copy we add is either published on the live entry or removed by us, never left behind.
        read(
                entry,
                (tier, rec, bytes) -> {
                    if (tier != from || entry.residentIn(to)) {
                        return null;
                    }
                    writeWithRoom(tiers.get(to), entry, record, bytes);
                    if (entry.addTier(to)) {
                        policies.get(to).onInsert(entry.key(), entry.parentKey());
                        events.copyAdded(to, record);
                        events.promoted(from, to, entry.length());
                        events.moved(from, to, entry.length(), System.nanoTime() - start);
                    } else {
                        tiers.get(to).delete(entry.key());
                    }
                    return null;
                },
                null);
        afterInsert(to);
    }

    // ---- delete -------------------------------------------------------------------------------

    /** Removes the block from every tier; false when it was not held. Pinned or leased blocks are refused. */
    public boolean delete(BlockKey key) {
        CatalogEntry entry = catalog.get(key);
        if (entry == null) {
            return false;
        }
        if (entry.pins() > 0 || entry.leases() > 0) {
            throw new IllegalStateException("block " + key + " is pinned or leased and cannot be deleted");
        }
        Set<TierId> had = entry.dropAll();
        for (TierId t : had) {
            events.copyRemoved(t, key, entry.length());
        }
        awaitNoReaders(entry);
        for (TierId t : had) {
            policies.get(t).onRemove(key);
            tiers.get(t).delete(key);
        }
        catalog.removeIfDead(entry);
        return !had.isEmpty();
    }

    /** Removes every unpinned, unleased block of a namespace; returns how many were removed. */
    public int deleteNamespace(String namespace) {
        int removed = 0;
        for (CatalogEntry entry : catalog.entries()) {
            if (entry.key().namespace().equals(namespace)
                    && entry.pins() == 0
                    && entry.leases() == 0
                    && delete(entry.key())) {
                removed++;
            }
        }
        return removed;
    }

    /** Resident blocks of {@code namespace} (pinned and leased ones included), by a scan of the catalog. */
    public int namespaceBlockCount(String namespace) {
        int n = 0;
        for (CatalogEntry entry : catalog.entries()) {
            if (entry.key().namespace().equals(namespace) && entry.fastestTier() != null) {
                n++;
            }
        }
        return n;
    }

    private static void awaitNoReaders(CatalogEntry entry) {
        long deadline = System.nanoTime() + READER_WAIT_NANOS;
        while (entry.readers() > 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("block " + entry.key() + " still has readers after 30 s");
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }

    // ---- pins and leases ----------------------------------------------------------------------

    /** Pins the resident blocks among {@code keys} so no policy evicts or moves them; returns how many. */
    public int pin(List<BlockKey> keys) {
        int n = 0;
        for (BlockKey key : keys) {
            CatalogEntry entry = catalog.get(key);
            if (entry != null && entry.pin()) {
                n++;
            }
        }
        return n;
    }

    public int unpin(List<BlockKey> keys) {
        int n = 0;
        for (BlockKey key : keys) {
            CatalogEntry entry = catalog.get(key);
            if (entry != null && entry.unpin()) {
                n++;
            }
        }
        return n;
    }

    /**
     * Leases the leading resident blocks of {@code keys} (stopping at the first that is not resident)
     * until released or until {@code timeout} passes.
     */
    public Lease lease(List<BlockKey> keys, Duration timeout) {
        List<BlockKey> held = new ArrayList<>(keys.size());
        for (BlockKey key : keys) {
            CatalogEntry entry = catalog.get(key);
            if (entry == null || !entry.lease()) {
                break;
            }
            held.add(key);
        }
        Lease lease = new Lease(
                UUID.randomUUID().toString(),
                held,
                clock.instant().plus(timeout == null ? defaultLeaseTimeout : timeout));
        leases.put(lease.id(), lease);
        return lease;
    }

    /** Releases a lease; false when it is unknown (already released or expired). */
    public boolean release(String leaseId) {
        Lease lease = leases.remove(leaseId);
        if (lease == null) {
            return false;
        }
        for (BlockKey key : lease.blocks()) {
            CatalogEntry entry = catalog.get(key);
            if (entry != null) {
                entry.release();
            }
        }
        return true;
    }

    public Lease leaseById(String leaseId) {
        return leases.get(leaseId);
    }

    public int activeLeases() {
        return leases.size();
    }

    private void expireLeasesAndReservations() {
        try {
            var now = clock.instant();
            int expired = 0;
            for (Lease lease : leases.values()) {
                if (lease.expiresAt().isBefore(now) && release(lease.id())) {
                    expired++;
                }
            }
            if (expired > 0) {
                log.info("{} lease(s) expired and released their blocks", expired);
            }
            int lapsed = 0;
            for (Reservation r : reservations.values()) {
                if (r.expiresAt().isBefore(now) && cancel(r.id())) {
                    lapsed++;
                }
            }
            if (lapsed > 0) {
                log.info("{} reservation(s) expired uncommitted; their slots are free again", lapsed);
            }
        } catch (RuntimeException e) {
            log.error("lease and reservation sweep failed", e);
        }
    }

    // ---- in-place (one-sided) writes ----------------------------------------------------------

    /**
     * Sets aside slots in memory tier {@code target} for blocks a peer will WRITE in place, evicting by
     * policy to make room. Blocks already resident get no slot. Nothing is visible until {@link #commit};
     * slots not committed by the reservation's expiry return to the pool. A peer that writes after its
     * reservation expired can only damage a slot whose next block then fails its checksum and is dropped,
     * never served.
     *
     * @throws TierFullException when the tier cannot make room for every block (nothing stays reserved)
     */
    public Reservation reserve(List<InPlaceBlock> blocks, TierId target, Duration timeout) throws IOException {
        if (!(tier(target) instanceof MemoryTier memory)) {
            throw new IllegalArgumentException("tier " + target + " is not a memory tier; in-place writes need one");
        }
        Set<BlockKey> seen = new java.util.HashSet<>();
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
                if (entry != null && entry.resident()) {
                    resident.add(b.key());
                } else {
                    slots.add(new Reservation.Slot(b, reserveWithRoom(memory, b.length())));
                }
            }
        } catch (IOException | RuntimeException e) {
            for (Reservation.Slot slot : slots) {
                memory.releaseSlot(slot.offset(), slot.block().length());
            }
            throw e;
        }
        Reservation r = new Reservation(
                UUID.randomUUID().toString(),
                target,
                slots,
                resident,
                clock.instant().plus(timeout == null ? defaultLeaseTimeout : timeout));
        reservations.put(r.id(), r);
        return r;
    }

    private long reserveWithRoom(MemoryTier memory, int length) throws IOException {
        long start = System.nanoTime();
        while (true) {
            try {
                return memory.reserveSlot(length);
            } catch (TierFullException full) {
                makeRoom(memory.id(), length, full, start);
            }
        }
    }

    /**
     * Makes a reservation's written slots visible: each slot's CRC32C is taken from the bytes in place
     * and, where the writer sent one in {@code expectedCrc32c}, must equal it; then the slot becomes the
     * block's copy exactly as a put would (a block stored meanwhile by someone else keeps its copy and the
     * slot is returned).
     *
     * @throws UnknownReservationException when the reservation was committed, cancelled or expired
     */
    public CommitReport commit(String reservationId, Map<BlockKey, Integer> expectedCrc32c) {
        Reservation r = reservations.remove(reservationId);
        if (r == null) {
            throw new UnknownReservationException(reservationId);
        }
        MemoryTier memory = (MemoryTier) tiers.get(r.tier());
        List<BlockKey> committed = new ArrayList<>();
        List<BlockKey> already = new ArrayList<>(r.alreadyStored());
        Map<BlockKey, String> failed = new java.util.LinkedHashMap<>();
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
                                "its bytes have CRC32C %08x, not the %08x the writer sent: the WRITE "
                                        + "did not land whole",
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
        java.util.stream.IntStream indexes = java.util.stream.IntStream.range(0, slots.size());
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
    private Stored publishSlot(MemoryTier memory, InPlaceBlock b, long offset, int crc) throws IOException {
        boolean[] adopted = {false};
        Stored stored;
        try {
            stored = store(b.key(), b.parent(), b.length(), crc, memory, (entry, record) -> {
                if (adopted[0]) {
                    throw new IllegalStateException("block " + b.key() + " was deleted while it was being committed");
                }
                awaitOldCopyFreed(memory, entry, b.key());
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
        if (!stored.copied()) {
            memory.releaseSlot(offset, b.length());
        }
        return stored;
    }

    /** Writes a block's bytes into the slot it is given, e.g. straight from a socket. */
    @FunctionalInterface
    public interface SlotFiller {
        void fill(MemorySegment slot) throws IOException;
    }

    /**
     * Stores a block whose bytes {@code filler} writes straight into a free slot of the fastest tier, saving
     * the copy {@link #put} makes; the slot is then checksummed and published exactly as a put would. A key
     * already resident is filled into {@code scratch} instead and must have the same bytes.
     *
     * @param scratch at least {@code length} bytes, used only when the block is already stored
     * @throws IllegalArgumentException when the key is already stored with other bytes
     */
    public TierId putInPlace(BlockKey key, BlockHash parent, int length, SlotFiller filler, MemorySegment scratch)
            throws IOException {
        CatalogEntry existing = catalog.get(key);
        if (!(tiers.firstEntry().getValue() instanceof MemoryTier memory)
                || (existing != null && existing.resident())) {
            MemorySegment bytes = scratch.asSlice(0, length);
            filler.fill(bytes);
            return put(key, parent, bytes);
        }
        long offset = reserveWithRoom(memory, length);
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
    public boolean cancel(String reservationId) {
        Reservation r = reservations.remove(reservationId);
        if (r == null) {
            return false;
        }
        MemoryTier memory = (MemoryTier) tiers.get(r.tier());
        for (Reservation.Slot slot : r.slots()) {
            memory.releaseSlot(slot.offset(), slot.block().length());
        }
        return true;
    }

    public int activeReservations() {
        return reservations.size();
    }

    // ---- administration -----------------------------------------------------------------------

    public void setPolicy(TierId id, EvictionPolicyKind kind) {
        tier(id);
        policies.get(id).switchTo(kind);
        settings.compute(id, (k, s) -> s.withPolicy(kind));
        log.info("tier {}: eviction policy is now {}", id, kind);
    }

    public void setWatermarks(TierId id, double high, double low) {
        tier(id);
        settings.compute(id, (k, s) -> s.withWatermarks(high, low));
        log.info("tier {}: watermarks now high {} low {}", id, high, low);
        afterInsert(id);
    }

    public TierSettings settings(TierId id) {
        tier(id);
        return settings.get(id);
    }

    public List<TierStats> stats() {
        List<TierStats> out = new ArrayList<>();
        for (BlockTier t : tiers.values()) {
            out.add(new TierStats(
                    t.id(),
                    t.provider(),
                    t instanceof MemoryTier m && m.emulated(),
                    t.capacityBytes(),
                    t.usedBytes(),
                    t.blockCount(),
                    settings.get(t.id())));
        }
        return out;
    }

    public Set<TierId> tierIds() {
        return tiers.keySet();
    }

    public BlockTier tier(TierId id) {
        BlockTier tier = tiers.get(id);
        if (tier == null) {
            throw new IllegalArgumentException("tier " + id + " is not configured; configured: " + tiers.keySet());
        }
        return tier;
    }

    public int blockCount() {
        return catalog.size();
    }

    /**
     * Waits until queued demotions and promotions have run, including moves they queued in turn (for
     * tests and orderly shutdown).
     */
    public void awaitMoves() {
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

    private void submitMove(Runnable move) {
        pendingMoves.incrementAndGet();
        try {
            mover.execute(() -> {
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
        leaseSweeper.shutdownNow();
        mover.shutdown();
        try {
            if (!mover.awaitTermination(30, TimeUnit.SECONDS)) {
                mover.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (BlockTier tier : tiers.values()) {
            tier.close();
        }
    }
}
