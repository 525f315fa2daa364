package io.kvstore.tier.memory;

import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Carves one memory region into fixed-size slots, one slot size per block layout, several layouts side
 * by side.
 *
 * <p>The region is cut into equal slabs (default 32 MiB); each slot size takes whole slabs and cuts them
 * into slots, and gives a slab back as soon as its last slot is freed, so memory flows between layouts
 * without copying. Slots are 4 KiB-aligned and a multiple of 4 KiB long, so a slot can be the source or
 * target of O_DIRECT I/O and of one-sided transfers without a bounce buffer. One region means one
 * registration with UCX/NIXL for the whole tier. Each slot size has its own lock; the slab pool's lock
 * is taken only when a slab changes hands. Slabs can be withheld (a file-backed region whose filesystem
 * ran out of space) and restored; a withheld slab hands out no new slot.
 */
public final class SlabAllocator {

    /** Slot sizes are rounded up to this, which is also the alignment of every slot. */
    public static final int SLOT_ALIGNMENT = 4096;

    private final long slabSize;
    private final int slabCount;
    private final ArrayDeque<Integer> freeSlabs = new ArrayDeque<>();
    private final ConcurrentHashMap<Long, SlotClass> classes = new ConcurrentHashMap<>();
    /**
     * The slot class used last: a tier mostly holds one block layout, and finding it here spares every
     * allocation and free a boxed {@code Long} key and a method reference (garbage on the store path).
     */
    private volatile @Nullable SlotClass lastClass;

    private final AtomicLong usedBytes = new AtomicLong();
    /** Slabs out of use ({@link #withhold}); guarded by {@link #freeSlabs}. */
    private final java.util.BitSet withheld = new java.util.BitSet();
    /** Withheld slabs that hold no slot (so {@link #restore} can hand them out again); guarded by freeSlabs. */
    private final java.util.BitSet withheldIdle = new java.util.BitSet();
    /** Whether any slab was ever withheld: lets allocation skip the check while none is. */
    private volatile boolean anyWithheld;

    /**
     * @param regionBytes the region's size; the tail beyond a whole number of slabs is not used
     * @param slabSize a multiple of 4 KiB, at most {@code regionBytes}
     */
    public SlabAllocator(long regionBytes, long slabSize) {
        if (slabSize <= 0 || slabSize % SLOT_ALIGNMENT != 0) {
            throw new IllegalArgumentException("slab size must be a positive multiple of 4 KiB, got " + slabSize);
        }
        if (slabSize > regionBytes) {
            throw new IllegalArgumentException("slab size " + slabSize + " exceeds the tier capacity " + regionBytes);
        }
        long count = regionBytes / slabSize;
        if (count > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("too many slabs: " + count + "; raise the slab size");
        }
        this.slabSize = slabSize;
        this.slabCount = (int) count;
        for (int i = 0; i < slabCount; i++) {
            freeSlabs.add(i);
        }
    }

    /** The slot size used for a block of {@code blockBytes}: rounded up to 4 KiB. */
    public static long slotSizeFor(long blockBytes) {
        return (blockBytes + SLOT_ALIGNMENT - 1) / SLOT_ALIGNMENT * SLOT_ALIGNMENT;
    }

    /** Bytes usable for slots: whole slabs only. */
    public long capacityBytes() {
        return slabSize * slabCount;
    }

    /** Bytes in slabs that are not withheld: what the region can hold now. */
    public long usableBytes() {
        synchronized (freeSlabs) {
            return slabSize * (slabCount - withheld.cardinality());
        }
    }

    /**
     * Takes slabs {@code [fromSlab, toSlab)} out of use (their backing store ran out of space): free ones at
     * once, the others as soon as their last slot is freed. Slots already in them stay valid.
     *
     * @return how many slabs were newly withheld
     */
    public int withhold(int fromSlab, int toSlab) {
        int added = 0;
        anyWithheld = true;
        synchronized (freeSlabs) {
            for (int i = Math.max(0, fromSlab); i < Math.min(slabCount, toSlab); i++) {
                if (!withheld.get(i)) {
                    withheld.set(i);
                    added++;
                    if (freeSlabs.remove(i)) {
                        withheldIdle.set(i);
                    }
                }
            }
        }
        return added;
    }

    /**
     * Puts withheld slabs {@code [fromSlab, toSlab)} back in use.
     *
     * @return how many slabs were restored
     */
    public int restore(int fromSlab, int toSlab) {
        int restored = 0;
        synchronized (freeSlabs) {
            for (int i = Math.max(0, fromSlab); i < Math.min(slabCount, toSlab); i++) {
                if (withheld.get(i)) {
                    withheld.clear(i);
                    restored++;
                    if (withheldIdle.get(i)) {
                        withheldIdle.clear(i);
                        freeSlabs.add(i);
                    }
                }
            }
        }
        return restored;
    }

    /** Whether slab {@code slab} is withheld. */
    public boolean withheld(int slab) {
        synchronized (freeSlabs) {
            return withheld.get(slab);
        }
    }

    /** Bytes of slots handed out and not yet freed. */
    public long usedBytes() {
        return usedBytes.get();
    }

    public long slabSize() {
        return slabSize;
    }

    /**
     * Takes a free slot of {@code slotSize} bytes.
     *
     * @return the slot's offset in the region, or -1 when neither a free slot of that size nor a free
     *     slab is left
     * @throws IllegalArgumentException when the slot size is not a multiple of 4 KiB or exceeds a slab
     */
    public long allocate(long slotSize) {
        if (slotSize <= 0 || slotSize % SLOT_ALIGNMENT != 0) {
            throw new IllegalArgumentException("slot size must be a positive multiple of 4 KiB, got " + slotSize);
        }
        if (slotSize > slabSize) {
            throw new IllegalArgumentException("a block of " + slotSize + " bytes does not fit a slab of " + slabSize
                    + " bytes; raise the tier's slab-size");
        }
        long offset = slotClass(slotSize).allocate();
        if (offset >= 0) {
            usedBytes.addAndGet(slotSize);
        }
        return offset;
    }

    /** Returns the slot at {@code offset} of {@code slotSize} bytes to the pool. */
    public void free(long offset, long slotSize) {
        SlotClass slotClass = existingSlotClass(slotSize);
        if (slotClass == null) {
            throw new IllegalArgumentException("no slots of size " + slotSize + " were ever allocated");
        }
        slotClass.free(offset);
        usedBytes.addAndGet(-slotSize);
    }

    /**
     * Takes the specific slot at {@code offset} (used when a durable tier rebuilds its allocation from its
     * index). The slot's slab must be free or already cut into slots of this size.
     *
     * @throws IllegalStateException when the slot is taken or its slab holds another slot size
     */
    public void claim(long offset, long slotSize) {
        if (slotSize <= 0 || slotSize % SLOT_ALIGNMENT != 0 || slotSize > slabSize) {
            throw new IllegalArgumentException("bad slot size " + slotSize);
        }
        int slab = (int) (offset / slabSize);
        if (slab < 0
                || slab >= slabCount
                || (offset - (long) slab * slabSize) % slotSize != 0
                || offset - (long) slab * slabSize + slotSize > slabSize) {
            throw new IllegalStateException("offset " + offset + " is not a slot of size " + slotSize);
        }
        slotClass(slotSize).claim(offset);
        usedBytes.addAndGet(slotSize);
    }

    /** The slot class of {@code slotSize}, made on first use. */
    private SlotClass slotClass(long slotSize) {
        SlotClass slotClass = existingSlotClass(slotSize);
        if (slotClass == null) {
            slotClass = classes.computeIfAbsent(slotSize, SlotClass::new);
            lastClass = slotClass;
        }
        return slotClass;
    }

    /** The slot class of {@code slotSize}, or null when no slot of that size was ever asked for. */
    private @Nullable SlotClass existingSlotClass(long slotSize) {
        SlotClass last = lastClass;
        if (last != null && last.slotSize == slotSize) {
            return last;
        }
        SlotClass slotClass = classes.get(slotSize);
        if (slotClass != null) {
            lastClass = slotClass;
        }
        return slotClass;
    }

    private boolean takeSpecificSlab(int slab) {
        synchronized (freeSlabs) {
            return freeSlabs.remove(slab);
        }
    }

    /** Whether a slot of this size could be had now without freeing anything. */
    public boolean canAllocate(long slotSize) {
        SlotClass slotClass = classes.get(slotSize);
        if (slotClass != null && slotClass.hasFreeSlot()) {
            return true;
        }
        synchronized (freeSlabs) {
            return !freeSlabs.isEmpty();
        }
    }

    private Integer takeSlab() {
        synchronized (freeSlabs) {
            return freeSlabs.poll();
        }
    }

    private void returnSlab(int slab) {
        synchronized (freeSlabs) {
            if (withheld.get(slab)) {
                withheldIdle.set(slab);
            } else {
                freeSlabs.push(slab);
            }
        }
    }

    /** Slots of one size: the slabs it owns that still have free slots, each with its own free stack. */
    private final class SlotClass {
        private final long slotSize;
        private final int slotsPerSlab;
        private final ArrayDeque<Slab> partial = new ArrayDeque<>();
        private final java.util.HashMap<Integer, Slab> owned = new java.util.HashMap<>();

        SlotClass(long slotSize) {
            this.slotSize = slotSize;
            this.slotsPerSlab = (int) (slabSize / slotSize);
        }

        synchronized boolean hasFreeSlot() {
            return !partial.isEmpty();
        }

        synchronized long allocate() {
            Slab slab = partial.peek();
            while (slab != null && anyWithheld && withheld(slab.index)) {
                // out of use until a slot in it is freed (then checked again) or it empties and is withheld
                partial.remove(slab);
                slab.benched = true;
                slab = partial.peek();
            }
            if (slab == null) {
                Integer index = takeSlab();
                if (index == null) {
                    return -1;
                }
                slab = new Slab(index, slotsPerSlab);
                owned.put(index, slab);
                partial.push(slab);
            }
            int slot = slab.take();
            if (slab.freeCount == 0) {
                partial.remove(slab);
            }
            return slab.index * slabSize + slot * slotSize;
        }

        synchronized void claim(long offset) {
            int index = (int) (offset / slabSize);
            Slab slab = owned.get(index);
            if (slab == null) {
                if (!takeSpecificSlab(index)) {
                    throw new IllegalStateException("slab " + index + " holds slots of another size");
                }
                slab = new Slab(index, slotsPerSlab);
                owned.put(index, slab);
                partial.push(slab);
            }
            slab.takeSpecific((int) ((offset - index * slabSize) / slotSize));
            if (slab.freeCount == 0) {
                partial.remove(slab);
            }
        }

        synchronized void free(long offset) {
            int index = (int) (offset / slabSize);
            Slab slab = owned.get(index);
            long within = offset - index * slabSize;
            if (slab == null || within % slotSize != 0) {
                throw new IllegalArgumentException("offset " + offset + " is not a slot of size " + slotSize);
            }
            boolean wasFull = slab.freeCount == 0;
            slab.give((int) (within / slotSize));
            if (slab.freeCount == slotsPerSlab) {
                partial.remove(slab);
                owned.remove(index);
                returnSlab(index);
            } else if (wasFull || slab.benched) {
                slab.benched = false;
                partial.push(slab);
            }
        }
    }

    /** One slab's free slot numbers as a stack; guarded by its slot class. */
    private static final class Slab {
        final int index;
        final int[] free;
        final java.util.BitSet inUse;
        int freeCount;
        /** Taken out of {@code partial} because its slab is withheld. */
        boolean benched;

        Slab(int index, int slots) {
            this.index = index;
            this.free = new int[slots];
            for (int i = 0; i < slots; i++) {
                free[i] = slots - 1 - i;
            }
            this.freeCount = slots;
            this.inUse = new java.util.BitSet(slots);
        }

        int take() {
            int slot = free[--freeCount];
            inUse.set(slot);
            return slot;
        }

        void takeSpecific(int slot) {
            if (inUse.get(slot)) {
                throw new IllegalStateException("slot " + slot + " of slab " + index + " is claimed twice");
            }
            for (int i = 0; i < freeCount; i++) {
                if (free[i] == slot) {
                    free[i] = free[--freeCount];
                    inUse.set(slot);
                    return;
                }
            }
            throw new IllegalStateException("slot " + slot + " of slab " + index + " is not free");
        }

        void give(int slot) {
            if (!inUse.get(slot)) {
                throw new IllegalStateException("slot " + slot + " of slab " + index + " freed twice");
            }
            inUse.clear(slot);
            free[freeCount++] = slot;
        }
    }
}
