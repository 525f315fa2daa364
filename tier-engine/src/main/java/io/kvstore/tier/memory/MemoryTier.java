package io.kvstore.tier.memory;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierFullException;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A memory tier (HBM or DRAM): one region from a {@link MemoryProvider}, carved into slots by a
 * {@link SlotTable}. A read copies the slot and then verifies the CRC32C of what it copied, so a
 * caller never receives bytes that differ from what was written.
 */
public final class MemoryTier implements BlockTier {

    private static final Logger log = LoggerFactory.getLogger(MemoryTier.class);

    private final TierId id;
    private final MemoryProvider provider;
    private final MemoryRegion region;
    private final SlotTable slots;

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

    /** The tier's whole memory, for registration with a transfer engine. */
    public MemorySegment region() {
        return region.segment();
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
        slots.place(record, offset -> MemorySegment.copy(src, 0, region.segment(), offset, record.length()));
    }

    @Override
    public BlockRecord read(BlockKey key, MemorySegment dst) throws BlockNotFoundException, ChecksumMismatchException {
        SlotTable.Slot r = slots.require(key);
        if (dst.byteSize() < r.record().length()) {
            throw new IllegalArgumentException("buffer of " + dst.byteSize() + " bytes is too small for block " + key
                    + " of " + r.record().length());
        }
        MemorySegment target = dst.asSlice(0, r.record().length());
        MemorySegment.copy(region.segment(), r.offset(), target, 0, r.record().length());
        if (Checksums.crc32c(target) != r.record().crc32c()) {
            throw new ChecksumMismatchException("block " + key + " in tier " + id + " fails its CRC32C");
        }
        return r.record();
    }

    /**
     * The block's bytes in place, after verifying them, for zero-copy sends. The caller must keep the
     * block from being freed while it uses the view (the engine holds a reader reference).
     */
    @Override
    public MemorySegment verifiedView(BlockKey key) throws BlockNotFoundException, ChecksumMismatchException {
        SlotTable.Slot r = slots.require(key);
        MemorySegment view = region.segment().asSlice(r.offset(), r.record().length());
        if (Checksums.crc32c(view) != r.record().crc32c()) {
            throw new ChecksumMismatchException("block " + key + " in tier " + id + " fails its CRC32C");
        }
        return view;
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
        return slots.take(length, " to reserve");
    }

    /** Returns a slot taken by {@link #reserveSlot} that was never adopted. */
    public void releaseSlot(long offset, int length) {
        slots.release(offset, length);
    }

    /** The first {@code length} bytes of the slot at {@code offset}, in place. */
    public MemorySegment slot(long offset, int length) {
        return region.segment().asSlice(offset, length);
    }

    /**
     * Makes a reserved slot, already written and checksummed by the caller into {@code record}, hold that
     * block: from now on it is read, verified and freed like any other.
     *
     * @return false when the tier already holds the key (the slot stays the caller's to release)
     */
    public boolean adopt(BlockRecord record, long offset) {
        return slots.adopt(record, offset);
    }

    /** The block's slot offset within {@link #region()}, or -1 when absent. */
    public long offsetOf(BlockKey key) {
        return slots.offsetOf(key);
    }

    @Override
    public boolean delete(BlockKey key) {
        return slots.remove(key);
    }

    @Override
    public boolean contains(BlockKey key) {
        return slots.contains(key);
    }

    @Override
    public void close() {
        slots.clear();
        region.close();
    }
}
