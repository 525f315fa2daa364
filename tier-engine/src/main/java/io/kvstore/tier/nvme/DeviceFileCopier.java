package io.kvstore.tier.nvme;

import java.io.IOException;

/**
 * The device-to-storage copies the NVMe tier needs to take a block straight from the device (HBM) tier's
 * memory or put one straight back, and nothing else: a span of the device region to a block file, and a
 * span of a block file to the device region, with no host memory between (GPUDirect Storage). The tier's
 * own logic (slots, durability order, index, checksums) is written against this interface, so it is
 * tested on CPU with a stand-in; the implementations that move bytes by DMA are cuFile's and NIXL's
 * {@code GDS}/{@code GDS_MT} backends ({@code io.kvstore.transfer}).
 *
 * <p>Neither call checksums anything: the CPU never sees the bytes. The NVMe tier records the CRC32C the
 * block was stored with (checked in host memory when it entered the device) and can read a written slot
 * back to check it; a block copied to the device is checked by the device tier's read-back.
 */
public interface DeviceFileCopier extends AutoCloseable {

    /** An open block file: its descriptor (opened O_DIRECT where the filesystem allows), path and size. */
    record BlockFile(int fd, String path, long size) {}

    /** What moves the bytes, as shown to operators ({@code cuFile}, {@code NIXL GDS_MT}, or a stand-in's name). */
    String name();

    /** Whether this copier stands in for a GPU path on a machine without one (tests), labelled wherever shown. */
    boolean standIn();

    /**
     * Writes {@code length} bytes at {@code deviceOffset} of the device region into {@code file} at
     * {@code fileOffset}; returns once written (not yet synced: the tier syncs the file).
     */
    void write(long deviceOffset, BlockFile file, long fileOffset, long length) throws IOException;

    /** Reads {@code length} bytes of {@code file} at {@code fileOffset} into the device region at {@code deviceOffset}. */
    void read(BlockFile file, long fileOffset, long deviceOffset, long length) throws IOException;

    /** Releases what the copier registered (file handles, the device buffer, a NIXL agent). */
    @Override
    void close();
}
