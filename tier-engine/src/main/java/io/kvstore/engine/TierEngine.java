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
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.DeviceFileCopier;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block manager: stores, finds and returns blocks across the configured tiers, moving them down
 * when a tier passes its high watermark and up on a hit where a tier asks for it.
 *
 * <p>A facade over the parts that do the work, each findable by name: {@link TierStack} (the tiers, their
 * settings and policies), {@link Residency} (the copy protocol: store, read, drop, delete), {@link Mover}
 * (eviction, demotion, promotion, write-through; the only code that moves blocks between tiers), {@link
 * LeaseTable} (pins and leases) and {@link InPlaceWrites} (reserve/commit and slots filled from a socket).
 * Each {@link BlockTier} owns its bytes, the {@link Catalog} owns which tiers hold a readable copy, each
 * tier's policy owns the order of eviction.
 *
 * <p>Why it is long: it is the one public door to the engine, so each operation the service needs has a
 * documented method here (lookup, store, read, delete, pins, leases, reservations, policy and watermark
 * settings, statistics); each is a few lines that hand over to the part that does the work.
 */
public final class TierEngine implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(TierEngine.class);

    private final Catalog catalog;
    private final TierStack stack;
    private final Residency residency;
    private final Mover mover;
    private final LeaseTable leases;
    private final InPlaceWrites inPlace;
    private final Clock clock;
    private final EngineEvents events;
    private final ScheduledExecutorService sweeper;
    private volatile boolean closing;

    /**
     * @param tierSettings settings per tier; tiers without an entry use {@link TierSettings#DEFAULT}
     * @param defaultLeaseTimeout how long a lease or reservation holds blocks when the caller names no timeout
     */
    public TierEngine(
            Collection<? extends BlockTier> tierList,
            Map<TierId, TierSettings> tierSettings,
            Duration defaultLeaseTimeout,
            EngineEvents events,
            Clock clock) {
        this(tierList, tierSettings, defaultLeaseTimeout, events, clock, null, false);
    }

    /**
     * An engine whose HBM and NVMe tiers exchange blocks straight through {@code deviceFiles} (GPUDirect
     * Storage: cuFile or NIXL GDS) when it is not null: HBM demotes to NVMe and NVMe hits promote to HBM
     * without host memory ({@link DeviceStoragePath}). The engine owns the copier and closes it.
     *
     * @param readBack whether a block written device-to-NVMe is read back into host memory and checked
     *     before it is indexed (otherwise it keeps the CRC32C checked in host memory when it entered HBM)
     * @throws IllegalArgumentException when {@code deviceFiles} is given but HBM is not a device tier or
     *     there is no NVMe tier
     */
    public TierEngine(
            Collection<? extends BlockTier> tierList,
            Map<TierId, TierSettings> tierSettings,
            Duration defaultLeaseTimeout,
            EngineEvents events,
            Clock clock,
            @Nullable DeviceFileCopier deviceFiles,
            boolean readBack) {
        this.clock = clock;
        this.events = events;
        this.catalog = new Catalog(clock::millis);
        this.stack = new TierStack(
                tierList,
                tierSettings,
                key -> {
                    CatalogEntry entry = catalog.get(key);
                    return entry == null ? null : entry.parentKey();
                },
                key -> {
                    CatalogEntry entry = catalog.get(key);
                    return entry == null ? 0 : entry.length();
                },
                key -> {
                    CatalogEntry entry = catalog.get(key);
                    return entry != null && entry.held();
                });
        if (deviceFiles != null) {
            BlockTier hbm = stack.ids().contains(TierId.HBM) ? stack.get(TierId.HBM) : null;
            BlockTier nvme = stack.ids().contains(TierId.NVME) ? stack.get(TierId.NVME) : null;
            if (!(hbm instanceof DeviceTier device) || !(nvme instanceof NvmeTier files)) {
                deviceFiles.close();
                throw new IllegalArgumentException("a device storage path (" + deviceFiles.name()
                        + ") needs an HBM tier in device memory and an NVMe tier; tiers: " + stack.ids());
            }
            stack.routeDeviceStorage(new DeviceStoragePath(device, files, deviceFiles, readBack));
        }
        SlotsBeingFreed slotsBeingFreed = new SlotsBeingFreed(stack.ids());
        this.residency = new Residency(stack, catalog, slotsBeingFreed, events);
        this.mover = new Mover(stack, catalog, residency, slotsBeingFreed, events);
        this.leases = new LeaseTable(catalog, clock, defaultLeaseTimeout, stack::holdsEnded);
        this.inPlace = new InPlaceWrites(stack, catalog, residency, mover, clock, defaultLeaseTimeout);
        residency.recover();
        this.sweeper = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("kvstore-lease-sweeper").daemon().factory());
        long sweepMillis = Math.max(50, Math.min(1000, defaultLeaseTimeout.toMillis() / 4));
        sweeper.scheduleWithFixedDelay(this::expireHolds, sweepMillis, sweepMillis, TimeUnit.MILLISECONDS);
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
                stack.policy(result.tiers().get(runStart))
                        .recordAccesses(result.blocks().subList(runStart, i));
                runStart = i;
            }
        }
        return result;
    }

    /** What the engine knows of {@code key} now, or null when it holds no such block. */
    public @Nullable BlockInfo info(BlockKey key) {
        CatalogEntry entry = catalog.get(key);
        return entry == null ? null : snapshot(entry);
    }

    private static BlockInfo snapshot(CatalogEntry entry) {
        return new BlockInfo(
                entry.key(),
                entry.parent(),
                entry.length(),
                entry.crc32c(),
                entry.tiers(),
                entry.pins(),
                entry.leases());
    }

    /**
     * Every block the engine knows, one snapshot per block as it is read (weakly consistent: blocks stored or
     * removed while the caller iterates may or may not appear), for re-announcing what each tier holds.
     */
    public java.util.Iterator<BlockInfo> blocks() {
        java.util.Iterator<CatalogEntry> entries = catalog.entries().iterator();
        return new java.util.Iterator<>() {
            @Override
            public boolean hasNext() {
                return entries.hasNext();
            }

            @Override
            public BlockInfo next() {
                return snapshot(entries.next());
            }
        };
    }

    /**
     * Where each block of {@code lease} sits in memory tier {@code tier}, in the lease's order, for peers
     * that read them one-sided; the lease keeps each where it is until released or expired.
     */
    public List<SlotLocation> locate(Lease lease, TierId tier) {
        MemoryTier memory = stack.memory(tier);
        List<SlotLocation> out = new ArrayList<>(lease.blocks().size());
        for (BlockKey key : lease.blocks()) {
            long offset = memory.offsetOf(key);
            CatalogEntry entry = catalog.get(key);
            // only a published copy: a slot still being filled by a move has an offset but no tier bit yet
            if (offset < 0 || entry == null || !entry.residentIn(tier)) {
                out.add(new SlotLocation(key, -1, 0, 0));
            } else {
                out.add(new SlotLocation(key, offset, entry.length(), entry.crc32c()));
            }
        }
        return out;
    }

    // ---- store --------------------------------------------------------------------------------

    /** Stores a block in the fastest configured tier. */
    public TierId put(BlockKey key, @Nullable BlockHash parent, MemorySegment bytes) throws IOException {
        return put(key, parent, bytes, stack.fastest());
    }

    /**
     * Stores {@code bytes} under {@code key} in {@code target}, evicting by policy to make room. Storing a
     * key that is already resident is a no-op returning the tier that holds it.
     *
     * @throws TierFullException when nothing more can be evicted (everything pinned, leased or being read)
     * @throws BlockConflictException when the key is already stored with other bytes
     */
    public TierId put(BlockKey key, @Nullable BlockHash parent, MemorySegment bytes, TierId target) throws IOException {
        BlockTier tier = stack.get(target);
        if (bytes.byteSize() <= 0 || bytes.byteSize() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("block " + key + " has " + bytes.byteSize() + " bytes");
        }
        int crc = Checksums.crc32c(bytes);
        Residency.Stored stored = residency.store(
                key,
                parent,
                (int) bytes.byteSize(),
                crc,
                tier,
                (entry, record) -> mover.writeWithRoom(tier, entry, record, bytes));
        if (stored.copied()) {
            mover.afterStore(stored);
        } else {
            mover.writeThroughIfAsked(stored);
        }
        return stored.tier();
    }

    /** Writes a block's bytes into the slot it is given, e.g. straight from a socket. */
    @FunctionalInterface
    public interface SlotFiller {
        void fill(MemorySegment slot) throws IOException;
    }

    /**
     * Stores a block whose bytes {@code filler} writes straight into a free slot of the fastest tier, saving
     * the copy {@link #put} makes; the slot is then checksummed and published exactly as a put would. A key
     * already resident is filled into {@code scratch} instead and must have the same bytes; so is a block whose
     * free slot lies where an unfenced reservation expired (its writer may still land bytes there), then put.
     *
     * @param scratch at least {@code length} bytes, used when the block is already stored or its slot was left
     *     by an unfenced reservation's expiry
     * @throws BlockConflictException when the key is already stored with other bytes
     */
    public TierId putInPlace(
            BlockKey key, @Nullable BlockHash parent, int length, SlotFiller filler, MemorySegment scratch)
            throws IOException {
        if (inPlace.canFillSlot(key)) {
            TierId tier = inPlace.putInPlace(key, parent, length, filler);
            if (tier != null) {
                return tier;
            }
            // the free slot is where a late writer may still land bytes: copied in, checksummed at the source
        }
        MemorySegment bytes = scratch.asSlice(0, length);
        filler.fill(bytes);
        return put(key, parent, bytes);
    }

    /**
     * Chooses write-back (the default: blocks reach the slowest tier when they are demoted) or
     * write-through (every put also writes the slowest tier before it returns) for a namespace.
     */
    public void setWriteThrough(String namespace, boolean enabled) {
        mover.setWriteThrough(namespace, enabled);
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

    private <T> T read(BlockKey key, BlockReader<T> reader, @Nullable MemorySegment dst) throws IOException {
        CatalogEntry entry = residency.entry(key);
        Residency.Hit<T> hit = residency.read(entry, reader::read, dst);
        mover.maybePromote(entry, hit.tier());
        return hit.value();
    }

    // ---- delete -------------------------------------------------------------------------------

    /**
     * Removes the block from every tier; false when it was not held.
     *
     * @throws BlockHeldException when the block is pinned or leased
     */
    public boolean delete(BlockKey key) {
        return residency.delete(key);
    }

    /** Removes every unpinned, unleased block of a namespace; returns how many were removed. */
    public int deleteNamespace(String namespace) {
        return residency.deleteNamespace(namespace);
    }

    /** Resident blocks of {@code namespace} (pinned and leased ones included), by a scan of the catalog. */
    public int namespaceBlockCount(String namespace) {
        return residency.namespaceBlockCount(namespace);
    }

    // ---- eviction and demotion ----------------------------------------------------------------

    /** Moves blocks out of {@code id} by policy until it is at or below its low watermark. */
    public void demoteToLowWatermark(TierId id) {
        mover.demoteToLowWatermark(id);
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
        return mover.evictWhile(
                id,
                k -> true,
                maxBytes <= 0 ? Long.MAX_VALUE : maxBytes,
                maxBlocks <= 0 ? Integer.MAX_VALUE : maxBlocks);
    }

    /** Evicts every evictable block of {@code namespace} from tier {@code id}, moving them down. */
    public EvictionReport evictNamespace(TierId id, String namespace) {
        return mover.evictWhile(id, k -> k.namespace().equals(namespace), Long.MAX_VALUE, Integer.MAX_VALUE);
    }

    // ---- pins and leases ----------------------------------------------------------------------

    /** Pins the resident blocks among {@code keys} so no policy evicts or moves them; returns how many. */
    public int pin(List<BlockKey> keys) {
        return leases.pin(keys);
    }

    public int unpin(List<BlockKey> keys) {
        return leases.unpin(keys);
    }

    /**
     * Leases the leading resident blocks of {@code keys} (stopping at the first that is not resident)
     * until released or until {@code timeout} passes.
     */
    public Lease lease(List<BlockKey> keys, @Nullable Duration timeout) {
        return leases.lease(keys, timeout);
    }

    /**
     * As {@link #lease(List, Duration)}, for {@code owner} (a tenant), who may hold at most {@code
     * maxBlocksPerOwner} leased blocks at once.
     *
     * @throws LeaseLimitException when this lease would take the owner past that (nothing is leased)
     */
    public Lease lease(List<BlockKey> keys, @Nullable Duration timeout, String owner, long maxBlocksPerOwner) {
        return leases.lease(keys, timeout, owner, maxBlocksPerOwner);
    }

    /** Blocks {@code owner} holds leased now (through {@link #lease(List, Duration, String, long)}). */
    public long leasedBlocks(String owner) {
        return leases.leasedBlocks(owner);
    }

    /** Releases a lease; false when it is unknown (already released or expired). */
    public boolean release(String leaseId) {
        return leases.release(leaseId);
    }

    public @Nullable Lease leaseById(String leaseId) {
        return leases.get(leaseId);
    }

    public int activeLeases() {
        return leases.size();
    }

    // ---- in-place (one-sided) writes ----------------------------------------------------------

    /**
     * Sets aside slots in memory tier {@code target} for blocks a peer will WRITE in place, evicting by
     * policy to make room. Blocks already resident get no slot. Nothing is visible until {@link #commit};
     * slots not committed by the reservation's expiry return to the pool. A peer that writes after its
     * reservation expired can damage a slot given to another block since: bytes landing after that block's
     * commit fail its checksum on the next read (dropped, never served); bytes landing between its writer's
     * copy and its commit are caught only when that writer commits with the CRC32Cs of its own bytes (which
     * every writer kvstore ships sends unless its reservation is fenced, see the overload below).
     *
     * @throws TierFullException when the tier cannot make room for every block (nothing stays reserved)
     */
    public Reservation reserve(List<InPlaceBlock> blocks, TierId target, @Nullable Duration timeout)
            throws IOException {
        return inPlace.reserve(blocks, target, timeout, null);
    }

    /**
     * As {@link #reserve(List, TierId, Duration)}, for a writer that can tell whether it may still be writing:
     * while {@code writer} answers {@link WriterState#FENCED}, the reservation's slots are not given to anyone
     * else, even after its expiry (a commit or cancel naming it, which a writer sends once its copies are done,
     * frees them at once). Such a writer is safe from a late writer without sending CRC32Cs: no slot it gets was
     * left by a writer still at work. Expired slots whose writer answers {@link WriterState#UNWATCHED} go back
     * remembered as an unfenced reservation's, until {@code writer} answers {@link WriterState#GONE} (the same
     * supplier is who left them; it must answer GONE only once its writer can write no more, and for good);
     * {@link WriterState#GONE}, back clean; once it answers {@link WriterState#LOST} (never watched again, maybe
     * still writing) its ranges are kept for good as no one's and {@code writer} is no longer held. The same-host
     * control socket answers from the connection the reservation was granted on and its client's other connections.
     */
    public Reservation reserve(
            List<InPlaceBlock> blocks, TierId target, @Nullable Duration timeout, Supplier<WriterState> writer)
            throws IOException {
        return inPlace.reserve(blocks, target, timeout, writer);
    }

    /** Whether the reservation still holds its slots (open, or expired but fenced for a writer still at work). */
    public boolean holdsReservation(String reservationId) {
        return inPlace.holds(reservationId);
    }

    /** Expired reservations whose slots stay fenced because their writer may still write. */
    public int fencedReservations() {
        return inPlace.fencedCount();
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
        return inPlace.commit(reservationId, expectedCrc32c);
    }

    /** Returns an uncommitted reservation's slots to the pool; false when it is unknown. */
    public boolean cancel(String reservationId) {
        return inPlace.cancel(reservationId);
    }

    public int activeReservations() {
        return inPlace.size();
    }

    private void expireHolds() {
        try {
            var now = clock.instant();
            int expired = leases.expire(now);
            if (expired > 0) {
                log.info("{} lease(s) expired and released their blocks", expired);
            }
            int lapsed = inPlace.expire(now);
            if (lapsed > 0) {
                events.reservationsExpired(lapsed);
                int fenced = inPlace.fencedCount();
                log.info(
                        "{} reservation(s) expired uncommitted; their slots are free again{}",
                        lapsed,
                        fenced == 0
                                ? ""
                                : ", except those of " + fenced
                                        + " fenced off while their writer's client is still connected");
            }
        } catch (RuntimeException e) {
            log.error("lease and reservation sweep failed", e);
        }
    }

    // ---- administration -----------------------------------------------------------------------

    public void setPolicy(TierId id, EvictionPolicyKind kind) {
        stack.setPolicy(id, kind);
    }

    /** Tier {@code id}'s eviction policy, for tests in this package that count what it tracks. */
    TierPolicy policy(TierId id) {
        return stack.policy(id);
    }

    public void setWatermarks(TierId id, double high, double low) {
        stack.setWatermarks(id, high, low);
        mover.afterInsert(id);
    }

    public TierSettings settings(TierId id) {
        return stack.settings(id);
    }

    public List<TierStats> stats() {
        return stack.stats(mover::demotionFailure);
    }

    /**
     * How blocks move between HBM and NVMe when they move directly (the device storage copier and its
     * checks), or null when they go through DRAM as between any other tiers.
     */
    public @Nullable String deviceStorageRoute() {
        return stack.deviceStorageRoute();
    }

    /**
     * How many moves between HBM and NVMe went through host memory because the device storage copier failed
     * (0 without a device storage path).
     */
    public long deviceStorageFallbacks() {
        return stack.deviceStorageFallbacks();
    }

    public Set<TierId> tierIds() {
        return stack.ids();
    }

    /** @throws IllegalArgumentException when {@code id} is not configured */
    public BlockTier tier(TierId id) {
        return stack.get(id);
    }

    public int blockCount() {
        return catalog.size();
    }

    /**
     * Waits until queued demotions and promotions have run, including moves they queued in turn (for
     * tests and orderly shutdown).
     */
    public void awaitMoves() {
        mover.awaitMoves();
    }

    /**
     * Stops the lease sweeper and the mover, each after the work it was doing, then closes the tiers: a sweep or a
     * move still freeing slots would otherwise meet closed tiers. A request still running then fails as its tier is
     * closed.
     */
    /**
     * Whether {@link #close} began: from then on a request may fail in any way a closed tier or a closed view of its
     * memory fails (the service answers such a failure as a shutdown, not as a fault).
     */
    public boolean closing() {
        return closing;
    }

    @Override
    public void close() {
        closing = true;
        sweeper.shutdownNow();
        try {
            sweeper.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        mover.close();
        stack.close();
        log.info("tier engine closed: tiers {} released", stack.ids());
    }
}
