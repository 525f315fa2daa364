package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.nvme.DeviceFileCopier;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;

/**
 * Blocks between the device (HBM) tier and the NVMe tier with no host memory between, through a {@link
 * DeviceFileCopier} (cuFile or NIXL GDS): the engine's route when the device path decided at start-up is
 * GPUDirect Storage. HBM then demotes straight to NVMe and NVMe hits promote straight to HBM; DRAM keeps
 * what is stored into it directly.
 *
 * <p>Checksums: a demoted block is indexed with the CRC32C it was checked against in host memory when it
 * entered the device (the DRAM or request copy it came from), and with {@code readBack} its slot is also
 * read back into host memory and checked before it is indexed; every later read from NVMe checks it. A
 * promoted block is read back from the device into host memory and checked before it is served.
 */
final class DeviceStoragePath {

    private final DeviceTier device;
    private final NvmeTier nvme;
    private final DeviceFileCopier copier;
    private final boolean readBack;

    DeviceStoragePath(DeviceTier device, NvmeTier nvme, DeviceFileCopier copier, boolean readBack) {
        this.device = device;
        this.nvme = nvme;
        this.copier = copier;
        this.readBack = readBack;
    }

    /** Whether a move from {@code from} to {@code to} goes this way. */
    boolean carries(TierId from, TierId to) {
        return from == TierId.HBM && to == TierId.NVME || from == TierId.NVME && to == TierId.HBM;
    }

    /**
     * Writes blocks the caller holds in the device tier (a claimed move keeps each slot) to NVMe in one
     * group commit.
     */
    void demote(List<BlockRecord> records) throws IOException {
        List<Long> offsets = new ArrayList<>(records.size());
        for (BlockRecord r : records) {
            offsets.add(device.slotOffset(r.key()));
        }
        nvme.writeAllFromDevice(records, offsets, copier, readBack);
    }

    /** The block arrived in device memory damaged although its NVMe copy is good: nothing was kept in HBM. */
    static final class DeviceCopyMismatch extends IOException {
        DeviceCopyMismatch(String message) {
            super(message);
        }
    }

    /**
     * Copies a block the caller holds in the NVMe tier into a free device slot, checked by read-back. When
     * the check fails, the NVMe copy is read through host memory to learn which side is bad.
     *
     * @throws ChecksumMismatchException when the NVMe copy is bad (dropped and counted by the NVMe tier)
     * @throws DeviceCopyMismatch when the NVMe copy is good but the bytes that reached the device were not
     */
    void promote(BlockRecord record) throws IOException {
        BlockKey key = record.key();
        try {
            device.writeFromStorage(record, offset -> nvme.readToDevice(key, offset, copier));
        } catch (ChecksumMismatchException arrivedBad) {
            try (Arena arena = Arena.ofConfined()) {
                nvme.read(key, arena.allocate(record.length(), 4096)); // throws when the file's copy is bad
            }
            throw new DeviceCopyMismatch(arrivedBad.getMessage() + "; its NVMe copy is good and stays");
        }
    }

    /** How operators see it: the copier's name, and whether demotion reads written slots back. */
    String describe() {
        return copier.name()
                + (copier.standIn() ? " (stand-in, not GPUDirect Storage)" : "")
                + (readBack ? ", demotions read back" : ", demotions keep the CRC32C taken in host memory");
    }

    void close() {
        copier.close();
    }
}
