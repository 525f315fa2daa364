package io.kvstore.tier.nvme;

import java.nio.file.Path;
import java.util.List;

/**
 * Where and how large the NVMe tier is.
 *
 * @param paths directories on the NVMe devices; block files are striped across them, the index lives in
 *     the first
 * @param capacityBytes total bytes of block files, a multiple of {@code fileSizeBytes}
 * @param fileSizeBytes size of each preallocated block file, a multiple of {@code slabSizeBytes}
 * @param slabSizeBytes unit in which space passes between block sizes (see SlabAllocator), a multiple of 4 KiB
 * @param ioThreads I/O requests kept in flight by batch reads and writes
 */
public record NvmeTierConfig(
        List<Path> paths, long capacityBytes, long fileSizeBytes, long slabSizeBytes, int ioThreads) {

    public NvmeTierConfig {
        if (paths == null || paths.isEmpty()) {
            throw new IllegalArgumentException("kvstore.tiers.nvme.paths: at least one directory is required");
        }
        paths = List.copyOf(paths);
        if (slabSizeBytes <= 0 || slabSizeBytes % 4096 != 0) {
            throw new IllegalArgumentException(
                    "kvstore.tiers.nvme.slab-size must be a positive multiple of 4 KiB, got " + slabSizeBytes);
        }
        if (fileSizeBytes < slabSizeBytes || fileSizeBytes % slabSizeBytes != 0) {
            throw new IllegalArgumentException("kvstore.tiers.nvme.file-size must be a multiple of the slab size "
                    + slabSizeBytes + ", got " + fileSizeBytes);
        }
        if (capacityBytes < fileSizeBytes || capacityBytes % fileSizeBytes != 0) {
            throw new IllegalArgumentException("kvstore.tiers.nvme.capacity must be a multiple of the file size "
                    + fileSizeBytes + ", got " + capacityBytes);
        }
        if (ioThreads < 1 || ioThreads > 256) {
            throw new IllegalArgumentException("kvstore.tiers.nvme.io-threads must be 1 to 256, got " + ioThreads);
        }
    }

    public int fileCount() {
        return (int) (capacityBytes / fileSizeBytes);
    }

    public Path indexDir() {
        return paths.getFirst().resolve("index");
    }
}
