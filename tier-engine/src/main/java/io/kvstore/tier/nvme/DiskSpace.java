package io.kvstore.tier.nvme;

import io.kvstore.ffm.libc.LibC;
import io.kvstore.ffm.libc.PosixException;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.SlabAllocator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NVMe tier's usable capacity when the filesystem below runs out of space before the tier's files
 * reach their configured size: which block files are withheld, why, and when they come back.
 *
 * <p>A write refused for want of space (ENOSPC, EDQUOT, or EFBIG from RLIMIT_FSIZE) withholds every block
 * file not yet created, since each would need new space, or, when all exist (a sparse or copy-on-write
 * filesystem that fails on write), the files the failed batch wrote to. Their free slabs leave the
 * allocator at once, the rest as their blocks go; blocks already stored stay readable. The write then fails
 * as {@link TierFullException}, which makes the engine evict the tier's own victims by policy and retry, so
 * the tier keeps working at the capacity the filesystem gave it. Each change of the usable capacity is one
 * log line, not one per block.
 *
 * <p>Capacity grows back when the filesystem has room again: at most once a second, and not sooner than a
 * second after the last shrink, the free space of each withheld file's directory is read (statvfs) and
 * every withheld file that fits in it is given back; a file that still cannot be created shrinks the tier
 * again, at most once a second.
 */
final class DiskSpace {

    private static final Logger log = LoggerFactory.getLogger(DiskSpace.class);
    private static final long RECHECK_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final NvmeTierConfig config;
    private final BlockFiles files;
    private final SlabAllocator slabs;
    private final int slabsPerFile;
    private final LongAdder errors = new LongAdder();
    /** Guarded by this. */
    private final BitSet withheldFiles = new BitSet();
    /** Guarded by this. */
    private long lastChangeNanos = System.nanoTime() - RECHECK_NANOS;

    private volatile @Nullable String shortage;

    DiskSpace(NvmeTierConfig config, BlockFiles files, SlabAllocator slabs) {
        this.config = config;
        this.files = files;
        this.slabs = slabs;
        this.slabsPerFile = (int) (config.fileSizeBytes() / config.slabSizeBytes());
    }

    /** The out-of-space error behind {@code failure} (itself or a cause), or null when it is another error. */
    static @Nullable PosixException outOfSpace(@Nullable Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof PosixException p
                    && (p.errno() == LibC.ENOSPC || p.errno() == LibC.EFBIG || p.errno() == LibC.EDQUOT)) {
                return p;
            }
        }
        return null;
    }

    /**
     * A write of slots at {@code offsets} failed with {@code error}: withholds the files that cannot grow
     * (see the class comment) and answers the exception the write should end with.
     */
    synchronized TierFullException shrink(PosixException error, Collection<Long> offsets) {
        errors.increment();
        long before = slabs.usableBytes();
        for (int f = 0; f < config.fileCount(); f++) {
            if (!files.created(f)) {
                withhold(f);
            }
        }
        if (slabs.usableBytes() == before) {
            for (long offset : offsets) {
                withhold(files.fileOf(offset));
            }
        }
        long usable = slabs.usableBytes();
        String reason = "the filesystem of " + files.dirOf(0) + " is out of space (" + error.getMessage()
                + "); usable capacity " + mib(usable) + " of " + mib(config.capacityBytes()) + " MiB configured";
        shortage = reason;
        if (usable != before) {
            lastChangeNanos = System.nanoTime();
            log.warn("NVMe tier: {}; it evicts its own blocks to make room", reason);
        }
        return new TierFullException("NVMe tier full: " + reason);
    }

    private void withhold(int file) {
        withheldFiles.set(file);
        slabs.withhold(file * slabsPerFile, (file + 1) * slabsPerFile);
    }

    /**
     * Gives withheld files back when their filesystem has room for them again; checks at most once a
     * second and not within a second of a change.
     *
     * @return whether the usable capacity grew
     */
    synchronized boolean maybeRegrow() {
        long now = System.nanoTime();
        if (withheldFiles.isEmpty() || now - lastChangeNanos < RECHECK_NANOS) {
            return false;
        }
        lastChangeNanos = now;
        Map<Path, Long> room = new HashMap<>();
        int restored = 0;
        for (int f = withheldFiles.nextSetBit(0); f >= 0; f = withheldFiles.nextSetBit(f + 1)) {
            Path dir = files.dirOf(f);
            long free = room.computeIfAbsent(dir, DiskSpace::freeBytes);
            if (free < config.fileSizeBytes()) {
                continue;
            }
            room.put(dir, free - config.fileSizeBytes());
            withheldFiles.clear(f);
            slabs.restore(f * slabsPerFile, (f + 1) * slabsPerFile);
            restored++;
        }
        if (restored == 0) {
            return false;
        }
        long usable = slabs.usableBytes();
        if (withheldFiles.isEmpty()) {
            shortage = null;
        } else {
            shortage = "the filesystem of " + files.dirOf(0) + " was out of space; usable capacity " + mib(usable)
                    + " of " + mib(config.capacityBytes()) + " MiB configured";
        }
        log.info(
                "NVMe tier: the filesystem has room again; usable capacity {} of {} MiB configured",
                mib(usable),
                mib(config.capacityBytes()));
        return true;
    }

    /** Why the usable capacity is below the configured one, or null while it is not. */
    @Nullable
    String shortage() {
        maybeRegrow();
        return shortage;
    }

    long errors() {
        return errors.sum();
    }

    private static long freeBytes(Path dir) {
        try {
            return Files.getFileStore(dir).getUsableSpace();
        } catch (IOException e) {
            return 0;
        }
    }

    private static long mib(long bytes) {
        return bytes >> 20;
    }
}
