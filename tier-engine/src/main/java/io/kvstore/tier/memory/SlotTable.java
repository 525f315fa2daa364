package io.kvstore.tier.memory;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.TierFullException;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which block lies in which slot of a slab-carved region, and the {@link SlabAllocator} behind the slots:
 * the bookkeeping a memory tier and the device tier share. It never touches the bytes; the tier fills and
 * reads a slot its own way (a CPU copy, a CUDA copy).
 */
public final class SlotTable {

    /** A stored block and the slot that holds it. */
    public record Slot(BlockRecord record, long offset, long slotSize) {}

    /** Fills a slot just taken; when it throws, the slot is given back. */
    @FunctionalInterface
    public interface Filler<E extends Exception> {
        void fill(long offset) throws E;
    }

    private final TierId id;
    private final SlabAllocator slabs;
    private final ConcurrentHashMap<BlockKey, Slot> blocks = new ConcurrentHashMap<>();

    /**
     * Slots over {@code capacityBytes}, in slabs of {@code slabSize} bytes (smaller when the capacity is),
     * the capacity rounded down to whole slabs.
     */
    public SlotTable(TierId id, long capacityBytes, long slabSize) {
        long effectiveSlab =
                Math.min(slabSize, capacityBytes / SlabAllocator.SLOT_ALIGNMENT * SlabAllocator.SLOT_ALIGNMENT);
        this.id = id;
        this.slabs = new SlabAllocator(capacityBytes / effectiveSlab * effectiveSlab, effectiveSlab);
    }

    public long capacityBytes() {
        return slabs.capacityBytes();
    }

    public long usedBytes() {
        return slabs.usedBytes();
    }

    public long slabSize() {
        return slabs.slabSize();
    }

    public int blockCount() {
        return blocks.size();
    }

    public boolean contains(BlockKey key) {
        return blocks.containsKey(key);
    }

    /** Whether a block of {@code length} bytes would fit now without evicting anything. */
    public boolean hasRoomFor(int length) {
        return slabs.canAllocate(SlabAllocator.slotSizeFor(length));
    }

    /**
     * Stores {@code record} in a free slot that {@code filler} fills; nothing happens when the block is
     * already held (or another thread placed it meanwhile: its slot wins, this one is given back).
     */
    public <E extends Exception> void place(BlockRecord record, Filler<E> filler) throws TierFullException, E {
        if (blocks.containsKey(record.key())) {
            return;
        }
        long offset = take(record.length(), "");
        try {
            filler.fill(offset);
        } catch (Exception e) {
            release(offset, record.length());
            throw e;
        }
        if (!adopt(record, offset)) {
            release(offset, record.length());
        }
    }

    /**
     * Takes a free slot for a block of {@code length} bytes that no reader sees until {@link #adopt}.
     *
     * @param why words for the error ("" or " to reserve")
     */
    public long take(int length, String why) throws TierFullException {
        long slotSize = SlabAllocator.slotSizeFor(length);
        long offset = slabs.allocate(slotSize);
        if (offset < 0) {
            throw new TierFullException("tier " + id + " has no free slot of " + slotSize + " bytes" + why + " ("
                    + slabs.usedBytes() + " of " + slabs.capacityBytes() + " bytes used)");
        }
        return offset;
    }

    /** Gives back a slot taken by {@link #take} that was never adopted. */
    public void release(long offset, int length) {
        slabs.free(offset, SlabAllocator.slotSizeFor(length));
    }

    /**
     * Makes a taken slot, already holding the bytes {@code record} describes, hold that block.
     *
     * @return false when the table already holds the key (the slot stays the caller's to release)
     */
    public boolean adopt(BlockRecord record, long offset) {
        return blocks.putIfAbsent(record.key(), new Slot(record, offset, SlabAllocator.slotSizeFor(record.length())))
                == null;
    }

    /** The block's slot. */
    public Slot require(BlockKey key) throws BlockNotFoundException {
        Slot s = blocks.get(key);
        if (s == null) {
            throw new BlockNotFoundException("tier " + id + " does not hold block " + key);
        }
        return s;
    }

    /** The block's slot offset, or -1 when absent. */
    public long offsetOf(BlockKey key) {
        Slot s = blocks.get(key);
        return s == null ? -1 : s.offset();
    }

    /** Forgets the block and frees its slot; false when it was not held. */
    public boolean remove(BlockKey key) {
        Slot s = blocks.remove(key);
        if (s == null) {
            return false;
        }
        slabs.free(s.offset(), s.slotSize());
        return true;
    }

    /** Forgets every block (the tier is closing). */
    public void clear() {
        blocks.clear();
    }
}
