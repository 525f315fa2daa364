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
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 *
 * <p>When the copier itself fails (cuFile cannot register a block file, a NIXL backend errors), the move goes
 * through host memory instead, checked there as on any other route, so HBM never fills up for want of a
 * copier: counted, said when it starts failing and when it works again (at most once a minute: {@link
 * FailureNotices}), and shown in {@link #describe}. Every move tries the copier first.
 */
final class DeviceStoragePath {

    private static final Logger log = LoggerFactory.getLogger(DeviceStoragePath.class);

    private final DeviceTier device;
    private final NvmeTier nvme;
    private final DeviceFileCopier copier;
    private final DeviceFileCopier marked;
    private final boolean readBack;
    private final FailureNotices failing = new FailureNotices(TimeUnit.MINUTES.toNanos(1));
    private final LongAdder fallbacks = new LongAdder();

    DeviceStoragePath(DeviceTier device, NvmeTier nvme, DeviceFileCopier copier, boolean readBack) {
        this.device = device;
        this.nvme = nvme;
        this.copier = copier;
        this.marked = new FailureMarking();
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
        try {
            nvme.writeAllFromDevice(records, offsets, marked, readBack);
        } catch (CopierFailure failed) {
            fellBack(failed, records.size());
            demoteThroughHost(records);
        }
    }

    /** {@link #demote} with each block copied out of the device into host memory, checked there, and written. */
    private void demoteThroughHost(List<BlockRecord> records) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            List<MemorySegment> bytes = new ArrayList<>(records.size());
            for (BlockRecord r : records) {
                MemorySegment b = arena.allocate(r.length(), 4096);
                device.read(r.key(), b);
                bytes.add(b);
            }
            nvme.writeAll(records, bytes);
        }
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
            device.writeFromStorage(record, offset -> nvme.readToDevice(key, offset, marked));
        } catch (CopierFailure failed) {
            fellBack(failed, 1);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment b = arena.allocate(record.length(), 4096);
                nvme.read(key, b); // checked; a bad copy is dropped by the NVMe tier and thrown
                device.write(record, b);
            }
        } catch (ChecksumMismatchException arrivedBad) {
            try (Arena arena = Arena.ofConfined()) {
                nvme.read(key, arena.allocate(record.length(), 4096)); // throws when the file's copy is bad
            }
            throw new DeviceCopyMismatch(arrivedBad.getMessage() + "; its NVMe copy is good and stays");
        }
    }

    /**
     * How operators see it: the copier's name, whether demotion reads written slots back, and whether the
     * copier is failing (moves then go through host memory).
     */
    String describe() {
        String why = failing.failing();
        return copier.name()
                + (copier.standIn() ? " (stand-in, not GPUDirect Storage)" : "")
                + (readBack ? ", demotions read back" : ", demotions keep the CRC32C taken in host memory")
                + (why == null ? "" : "; failing (" + why + "): moves go through host memory until it works again");
    }

    /** Moves that went through host memory because the copier failed. */
    long fallbacks() {
        return fallbacks.sum();
    }

    private void fellBack(CopierFailure failed, int blocks) {
        fallbacks.add(blocks);
        if (failing.failed(failed.getMessage(), System.nanoTime())) {
            log.warn(
                    "device storage: {} fails ({}); HBM and NVMe move blocks through host memory until it works again"
                            + " ({} moves so far; at most one such line a minute)",
                    copier.name(),
                    failed.getMessage(),
                    fallbacks.sum());
        }
    }

    private void works() {
        if (failing.worked()) {
            log.info("device storage: {} works again; HBM and NVMe move blocks straight to each other", copier.name());
        }
    }

    void close() {
        copier.close();
    }

    /** A failure of the copier itself, as opposed to the tiers around it (a full tier, a bad checksum). */
    private static final class CopierFailure extends IOException {
        CopierFailure(Exception cause) {
            super(cause.getMessage() == null ? cause.toString() : cause.getMessage(), cause);
        }

        @Override
        public String getMessage() {
            return String.valueOf(super.getMessage());
        }
    }

    /** One call of the copier. */
    @FunctionalInterface
    private interface Copy {
        void run() throws IOException;
    }

    /**
     * The copier, its failures thrown as {@link CopierFailure} so that they can be told from the tiers', and
     * its first copy after a failure reported as the path working again.
     */
    private final class FailureMarking implements DeviceFileCopier {

        @Override
        public String name() {
            return copier.name();
        }

        @Override
        public boolean standIn() {
            return copier.standIn();
        }

        @Override
        public void write(long deviceOffset, BlockFile file, long fileOffset, long length) throws IOException {
            marked(() -> copier.write(deviceOffset, file, fileOffset, length));
        }

        @Override
        public void read(BlockFile file, long fileOffset, long deviceOffset, long length) throws IOException {
            marked(() -> copier.read(file, fileOffset, deviceOffset, length));
        }

        private void marked(Copy copy) throws IOException {
            try {
                copy.run();
            } catch (IOException | RuntimeException e) {
                throw new CopierFailure(e);
            }
            works();
        }

        @Override
        public void close() {
            copier.close();
        }
    }
}
