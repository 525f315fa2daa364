package io.kvstore.tier.nvme;

import io.kvstore.ffm.libc.LibC;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A STAND-IN for cuFile on a machine without a GPU: the "device region" is an emulated device tier's host
 * memory, and the copies are plain {@code pwrite}/{@code pread} between that region and the NVMe tier's
 * (O_DIRECT) block files, with the same arguments cuFile would get. It lets the engine's direct HBM to NVMe
 * path (slots, durability, index, checksums, crash recovery) run on CPU; it proves nothing about DMA.
 * Labelled a stand-in wherever the engine shows it. It counts its copies, can damage the next copy into
 * the device (a bad transfer) so the device tier's read-back check is exercised, and can fail every copy
 * as cuFile does for a file it cannot register.
 */
public final class StandInDeviceFileCopier implements DeviceFileCopier {

    private final MemorySegment region;
    private final AtomicInteger writes = new AtomicInteger();
    private final AtomicInteger reads = new AtomicInteger();
    private final AtomicBoolean damageNextRead = new AtomicBoolean();
    private final AtomicBoolean failing = new AtomicBoolean();

    /** A copier over {@code region}: the emulated device tier's memory ({@code DeviceTier#region()}). */
    public StandInDeviceFileCopier(MemorySegment region) {
        this.region = region;
    }

    @Override
    public String name() {
        return "pwrite/pread stand-in for cuFile";
    }

    @Override
    public boolean standIn() {
        return true;
    }

    @Override
    public void write(long deviceOffset, BlockFile file, long fileOffset, long length) throws IOException {
        failWhenTold(file);
        LibC.pwriteFully(file.fd(), region.asSlice(deviceOffset, length), fileOffset, file.path());
        writes.incrementAndGet();
    }

    @Override
    public void read(BlockFile file, long fileOffset, long deviceOffset, long length) throws IOException {
        failWhenTold(file);
        LibC.preadFully(file.fd(), region.asSlice(deviceOffset, length), fileOffset, file.path());
        if (damageNextRead.getAndSet(false)) {
            long at = deviceOffset + 17;
            region.set(ValueLayout.JAVA_BYTE, at, (byte) (region.get(ValueLayout.JAVA_BYTE, at) ^ 0x40));
        }
        reads.incrementAndGet();
    }

    /** Slots copied device to file so far. */
    public int writes() {
        return writes.get();
    }

    /** Slots copied file to device so far. */
    public int reads() {
        return reads.get();
    }

    /** Makes the next copy into the device arrive with one byte flipped, as a failed transfer would. */
    public void damageNextRead() {
        damageNextRead.set(true);
    }

    /**
     * From now on every copy fails (or, with {@code false}, works again) the way cuFile fails on a file it
     * cannot register: an unchecked exception naming the call and its status, nothing copied.
     */
    public void failCopies(boolean fail) {
        failing.set(fail);
    }

    private void failWhenTold(BlockFile file) {
        if (failing.get()) {
            throw new IllegalStateException("cuFileHandleRegister(fd " + file.fd() + ", " + file.path()
                    + ") failed: CU_FILE_HANDLE_NOT_REGISTERED" + " (5027) [stand-in]");
        }
    }

    @Override
    public void close() {}
}
