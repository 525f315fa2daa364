package io.kvstore.tier.device;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.SlotTable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HBM tier on a GPU: slots in device memory kept by a {@link SlotTable}, filled and read only
 * through a {@link DeviceCopier} (CUDA copies on its own streams), never touched by the CPU.
 *
 * <p>Checksums are computed where the bytes pass through host memory: a block arriving (promotion from
 * DRAM, a put) is checked against its record's CRC32C in host memory before it is copied to the device,
 * so a block corrupted in DRAM never reaches HBM; a block leaving (demotion, a get) is copied to host
 * memory and checked there before the caller sees it, as {@code MemoryTier} does. Bytes at rest in HBM
 * are not re-checked in place (that would need a GPU kernel), so there are no in-place views.
 */
public final class DeviceTier implements BlockTier {

    private static final Logger log = LoggerFactory.getLogger(DeviceTier.class);

    private final TierId id;
    private final DeviceCopier copier;
    private final SlotTable slots;

    /** A tier over the whole of {@code copier}'s region, in slabs of {@code slabSize} bytes. */
    public DeviceTier(TierId id, DeviceCopier copier, long slabSize) {
        if (id != TierId.HBM) {
            throw new IllegalArgumentException("a device tier is the HBM tier, not " + id);
        }
        this.id = id;
        this.copier = copier;
        this.slots = new SlotTable(id, copier.capacityBytes(), slabSize);
        log.info(
                "tier {}: {} MiB of {} memory{}, slabs of {} KiB",
                id,
                slots.capacityBytes() >> 20,
                copier.name(),
                copier.emulated() ? " (emulated, not a GPU)" : "",
                slots.slabSize() >> 10);
    }

    @Override
    public TierId id() {
        return id;
    }

    @Override
    public String provider() {
        return copier.name();
    }

    public boolean emulated() {
        return copier.emulated();
    }

    /** The device region, for registration with a transfer engine. */
    public MemorySegment region() {
        return copier.region();
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

    /**
     * Checks {@code src} against the record's CRC32C in host memory, then copies it to a free slot.
     *
     * @throws ChecksumMismatchException when the host bytes are not the block the record describes
     */
    @Override
    public void write(BlockRecord record, MemorySegment src) throws TierFullException, ChecksumMismatchException {
        if (src.byteSize() != record.length()) {
            throw new IllegalArgumentException("block " + record.key() + " is " + src.byteSize()
                    + " bytes but its record says " + record.length());
        }
        if (slots.contains(record.key())) {
            return;
        }
        if (Checksums.crc32c(src) != record.crc32c()) {
            throw new ChecksumMismatchException(
                    "block " + record.key() + " fails its CRC32C in host memory on its way to tier " + id);
        }
        slots.place(record, offset -> copier.toDevice(src, offset));
    }

    /**
     * The block's slot in the device region, for a copy straight to storage; valid while the caller holds
     * the block (a reader or a claimed move), which keeps the slot from being freed.
     */
    public long slotOffset(BlockKey key) throws BlockNotFoundException {
        return slots.require(key).offset();
    }

    /**
     * Stores a block whose bytes {@code filler} puts straight into a free slot of the device region (DMA
     * from storage, given the slot's offset), then reads the slot back into host memory and checks its
     * CRC32C there before the block is held: nothing that was not checked is ever served from this tier.
     *
     * @throws ChecksumMismatchException when the bytes that arrived are not the block (the slot is freed)
     */
    public void writeFromStorage(BlockRecord record, SlotTable.Filler<IOException> filler) throws IOException {
        slots.place(record, offset -> {
            filler.fill(offset);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment back = arena.allocate(record.length(), 4096);
                copier.toHost(offset, back);
                if (Checksums.crc32c(back) != record.crc32c()) {
                    throw new ChecksumMismatchException("block " + record.key() + " copied from storage into tier " + id
                            + " fails its CRC32C on read-back");
                }
            }
        });
    }

    /** Copies the block to {@code dst} (host memory) and checks its CRC32C there. */
    @Override
    public BlockRecord read(BlockKey key, MemorySegment dst) throws BlockNotFoundException, ChecksumMismatchException {
        SlotTable.Slot r = slots.require(key);
        if (dst.byteSize() < r.record().length()) {
            throw new IllegalArgumentException("buffer of " + dst.byteSize() + " bytes is too small for block " + key
                    + " of " + r.record().length());
        }
        MemorySegment target = dst.asSlice(0, r.record().length());
        copier.toHost(r.offset(), target);
        if (Checksums.crc32c(target) != r.record().crc32c()) {
            throw new ChecksumMismatchException("block " + key + " in tier " + id + " fails its CRC32C");
        }
        return r.record();
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
        copier.close();
    }
}
