package io.kvstore.tier.memory;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.ffm.UseCount;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierClosedException;
import io.kvstore.tier.TierFullException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A memory tier (HBM or DRAM): one region from a {@link MemoryProvider}, carved into slots by a
 * {@link SlotTable}. A read copies the slot and then verifies the CRC32C of what it copied, so a
 * caller never receives bytes that differ from what was written.
 *
 * <p>Closing frees native memory (raw pinned or UCX-allocated memory has no liveness check of its own), so two
 * guards keep a call racing close from touching freed memory, which would crash the process or read garbage:
 * <ul>
 *   <li>every call that reaches the memory or the slot table is a use of the tier ({@link UseCount}, one
 *       compare-and-set): once {@link #close} began a call fails with {@link TierClosedException} ("DRAM tier
 *       closed"), and close frees the memory only after the calls under way have returned;
 *   <li>every segment the tier hands out ({@link #region}, {@link #slot}, {@link #verifiedView}: a lease's
 *       zero-copy send, a slot filled in place from a socket, a mover's copy) belongs to a shared arena that close
 *       closes before it frees the memory: the JDK lets that close end only when no thread is inside an access
 *       to those segments (a handshake; a native call or channel I/O on them holds the arena and close waits up to
 *       {@link #ACCESS_WAIT_SECONDS} for it), and afterwards every Java access to them throws
 *       {@link IllegalStateException} ("Already closed") instead of reading freed memory.
 * </ul>
 * What the JDK cannot see is the tier's memory reached by address from outside Java. Memory a transfer engine
 * allocated for the tier (UCX, {@link UcxSharedMemoryProvider}) is deregistered and freed in one step by this
 * close; memory merely registered with one (UCX, NIXL) stays registered until that engine closes, which the service
 * does just after the tier engine, so a peer's one-sided READ or WRITE landing in between (of a lease or a
 * reservation the closing engine no longer honours) is not fenced here. Engines on the same host that map the
 * tier's shared file ({@link SharedFileMemoryProvider}) keep their own mapping of the file, which outlives this
 * process's.
 */
public final class MemoryTier implements BlockTier {

    private static final Logger log = LoggerFactory.getLogger(MemoryTier.class);

    /** How long {@link #close} waits for native calls or channel I/O still using segments it handed out. */
    static final long ACCESS_WAIT_SECONDS = 30;

    private final TierId id;
    private final MemoryProvider provider;
    private final MemoryRegion region;
    private final SlotTable slots;
    /** The calls under way that touch the memory or the slot table; {@link #close} waits for them. */
    private final UseCount uses = new UseCount();
    /** The scope of every segment of the memory the tier uses or hands out; closed before the memory is freed. */
    private final Arena access = Arena.ofShared();
    /** The region's memory, within {@link #access}. */
    private final MemorySegment memory;

    /**
     * Allocates the whole tier up front: a tier's capacity is memory it owns, so start-up fails
     * clearly rather than a put failing later.
     */
    public MemoryTier(TierId id, MemoryProvider provider, long capacityBytes, long slabSize) {
        if (id == TierId.NVME) {
            throw new IllegalArgumentException("NVME is not a memory tier");
        }
        var availability = provider.availability();
        if (!availability.available()) {
            throw new IllegalStateException("memory provider '" + provider.name() + "' for tier " + id
                    + " is unavailable: " + availability.detail());
        }
        if (!provider.hostAccessible()) {
            throw new IllegalStateException("tier " + id + ": provider '" + provider.name() + "' gives memory that "
                    + "only CUDA can copy; a memory tier copies with the CPU, so use cuda-pinned, host or "
                    + "emulated-device for this tier");
        }
        this.id = id;
        this.provider = provider;
        this.slots = new SlotTable(id, capacityBytes, slabSize);
        this.region = provider.allocate(slots.capacityBytes());
        this.memory = region.segment().reinterpret(access, null);
        log.info(
                "tier {}: {} MiB of {} memory{}, slabs of {} KiB",
                id,
                slots.capacityBytes() >> 20,
                provider.name(),
                region.locked() ? " (locked)" : "",
                slots.slabSize() >> 10);
    }

    @Override
    public TierId id() {
        return id;
    }

    @Override
    public String provider() {
        return provider.name();
    }

    public boolean emulated() {
        return provider.emulated();
    }

    /**
     * The tier's whole memory, for registration with a transfer engine; Java access to it fails once the tier is
     * closed, access by address (a registration) must end before.
     */
    public MemorySegment region() {
        return memory;
    }

    @Override
    public long capacityBytes() {
        return slots.capacityBytes();
    }

    @Override
    public long usedBytes() {
        return slots.usedBytes();
    }

    @Override
    public int blockCount() {
        return slots.blockCount();
    }

    /** Whether a block of {@code length} bytes would fit now without evicting anything. */
    public boolean hasRoomFor(int length) {
        return slots.hasRoomFor(length);
    }

    @Override
    public void write(BlockRecord record, MemorySegment src) throws TierFullException {
        if (src.byteSize() != record.length()) {
            throw new IllegalArgumentException("block " + record.key() + " is " + src.byteSize()
                    + " bytes but its record says " + record.length());
        }
        enter();
        try {
            slots.place(record, offset -> MemorySegment.copy(src, 0, memory, offset, record.length()));
        } finally {
            uses.exit();
        }
    }

    @Override
    public BlockRecord read(BlockKey key, MemorySegment dst) throws BlockNotFoundException, ChecksumMismatchException {
        enter();
        try {
            return readSlot(key, dst);
        } finally {
            uses.exit();
        }
    }

    /** {@link #read} within a use the caller holds. */
    private BlockRecord readSlot(BlockKey key, MemorySegment dst)
            throws BlockNotFoundException, ChecksumMismatchException {
        SlotTable.Slot r = slots.require(key);
        if (dst.byteSize() < r.record().length()) {
            throw new IllegalArgumentException("buffer of " + dst.byteSize() + " bytes is too small for block " + key
                    + " of " + r.record().length());
        }
        MemorySegment target = dst.asSlice(0, r.record().length());
        MemorySegment.copy(memory, r.offset(), target, 0, r.record().length());
        if (Checksums.crc32c(target) != r.record().crc32c()) {
            throw new ChecksumMismatchException("block " + key + " in tier " + id + " fails its CRC32C");
        }
        return r.record();
    }

    /**
     * The block's bytes in place, after verifying them, for zero-copy sends. The caller must keep the
     * block from being freed while it uses the view (the engine holds a reader reference); once the tier is
     * closed, access to the view throws {@link IllegalStateException}.
     */
    @Override
    public MemorySegment verifiedView(BlockKey key) throws BlockNotFoundException, ChecksumMismatchException {
        enter();
        try {
            SlotTable.Slot r = slots.require(key);
            MemorySegment view = memory.asSlice(r.offset(), r.record().length());
            if (Checksums.crc32c(view) != r.record().crc32c()) {
                throw new ChecksumMismatchException("block " + key + " in tier " + id + " fails its CRC32C");
            }
            return view;
        } finally {
            uses.exit();
        }
    }

    /**
     * Takes a free slot for a block of {@code length} bytes that a peer will write in place (one-sided);
     * the slot counts as used but no reader sees it until {@link #adopt}.
     *
     * @return the slot's offset within {@link #region()}
     * @throws TierFullException when no slot of that size is free
     */
    public long reserveSlot(int length) throws TierFullException {
        if (length <= 0) {
            throw new IllegalArgumentException("block length must be positive, got " + length);
        }
        enter();
        try {
            return slots.take(length, " to reserve");
        } finally {
            uses.exit();
        }
    }

    /**
     * Returns a slot taken by {@link #reserveSlot} that was never adopted; nothing to do once the tier is closed
     * (the slot went with its memory), so a caller cleaning up after a failure keeps its own exception.
     */
    public void releaseSlot(long offset, int length) {
        if (!uses.tryEnter()) {
            return;
        }
        try {
            slots.release(offset, length);
        } finally {
            uses.exit();
        }
    }

    /**
     * The first {@code length} bytes of the slot at {@code offset}, in place; access to it throws
     * {@link IllegalStateException} once the tier is closed.
     */
    public MemorySegment slot(long offset, int length) {
        enter();
        try {
            return memory.asSlice(offset, length);
        } finally {
            uses.exit();
        }
    }

    /**
     * Makes a reserved slot, already written and checksummed by the caller into {@code record}, hold that
     * block: from now on it is read, verified and freed like any other.
     *
     * @return false when the tier already holds the key (the slot stays the caller's to release)
     */
    public boolean adopt(BlockRecord record, long offset) {
        enter();
        try {
            return slots.adopt(record, offset);
        } finally {
            uses.exit();
        }
    }

    /** The block's slot offset within {@link #region()}, or -1 when absent. */
    public long offsetOf(BlockKey key) {
        return slots.offsetOf(key);
    }

    @Override
    public boolean delete(BlockKey key) {
        enter();
        try {
            return slots.remove(key);
        } finally {
            uses.exit();
        }
    }

    @Override
    public boolean contains(BlockKey key) {
        return slots.contains(key);
    }

    /**
     * Begins a use of the memory and the slot table; end it with {@code uses.exit()}.
     *
     * @throws TierClosedException once {@link #close} began
     */
    private void enter() {
        if (!uses.tryEnter()) {
            throw new TierClosedException(id.name());
        }
    }

    /**
     * Refuses new calls, waits for those under way, forgets every block, ends access to the segments handed out
     * and then frees the memory. Memory still held by a native call or channel I/O after
     * {@link #ACCESS_WAIT_SECONDS} is left allocated (with a warning) rather than freed under it. A second call
     * returns once the first has waited for the calls.
     */
    @Override
    public void close() {
        if (!uses.closeAndAwait()) {
            return;
        }
        slots.clear();
        if (closeAccess()) {
            region.close();
        } else {
            log.warn(
                    "tier {}: its memory is still used by a native call or I/O {} s after close; left allocated",
                    id,
                    ACCESS_WAIT_SECONDS);
        }
    }

    /**
     * Closes {@link #access}; false when a segment of it was still held (a downcall or channel I/O on it) at the
     * deadline. A thread merely copying or reading it is stopped by the JDK's handshake, which close waits for.
     */
    private boolean closeAccess() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(ACCESS_WAIT_SECONDS);
        while (true) {
            try {
                access.close();
                return true;
            } catch (IllegalStateException held) {
                if (System.nanoTime() - deadline > 0) {
                    return false;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
            }
        }
    }
}
