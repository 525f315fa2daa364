package io.kvstore.tier.nvme;

import io.kvstore.ffm.libc.LibC;
import io.kvstore.ffm.libc.PosixException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NVMe tier's block files: {@code fileCount} files of {@code fileSize} bytes striped across the
 * configured directories, addressed as one linear space. A file is created and preallocated the first
 * time a slot in it is used, so a full disk shows up as a clear error on the write that needed the
 * space while every existing file keeps serving. Files are opened with O_DIRECT; where the filesystem
 * refuses it (tmpfs) they are opened buffered and one warning says so.
 */
final class BlockFiles implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(BlockFiles.class);
    private static final int MODE = 0644;

    private final NvmeTierConfig config;
    /** Guarded by this; {@link #openFds} publishes opened descriptors to the I/O threads without a lock. */
    private final int[] fds;

    private final java.util.concurrent.atomic.AtomicIntegerArray openFds;
    private final Path[] paths;
    /** Each file's length when the tier opened (0 for a file that did not exist), for checking the index. */
    private final long[] lengthAtOpen;

    private volatile boolean direct = true;
    private volatile boolean warnedBuffered;
    private volatile boolean warnedTruncate;

    BlockFiles(NvmeTierConfig config) throws IOException {
        this.config = config;
        this.fds = new int[config.fileCount()];
        this.paths = new Path[config.fileCount()];
        this.lengthAtOpen = new long[config.fileCount()];
        this.openFds = new java.util.concurrent.atomic.AtomicIntegerArray(config.fileCount());
        for (int i = 0; i < config.fileCount(); i++) {
            openFds.set(i, -1);
        }
        java.util.Arrays.fill(fds, -1);
        for (Path dir : config.paths()) {
            Files.createDirectories(dir);
            probeDirectIo(dir);
        }
        for (int i = 0; i < fds.length; i++) {
            Path dir = config.paths().get(i % config.paths().size());
            paths[i] = dir.resolve(String.format("blocks-%05d.dat", i));
            if (Files.exists(paths[i])) {
                lengthAtOpen[i] = Files.size(paths[i]);
                open(i);
                openFds.set(i, fds[i]);
            }
        }
    }

    /** Opens a scratch file with O_DIRECT to learn, before any block is stored, whether the filesystem allows it. */
    private void probeDirectIo(Path dir) throws IOException {
        Path probe = dir.resolve(".o_direct-probe");
        try {
            LibC.close(LibC.open(probe.toString(), LibC.O_RDWR | LibC.O_CREAT | LibC.O_CLOEXEC | LibC.O_DIRECT, MODE));
        } catch (PosixException e) {
            if (e.errno() != LibC.EINVAL) {
                throw e;
            }
            direct = false;
            warnedBuffered = true;
            log.warn(
                    "the filesystem of {} does not support O_DIRECT; the NVMe tier uses buffered I/O "
                            + "(slower, and it competes with the page cache)",
                    dir);
        } finally {
            Files.deleteIfExists(probe);
        }
    }

    /**
     * Whether the file holding {@code offset} held all of {@code [offset, offset + length)} when the tier
     * opened: an index entry naming a slot past the end of a file cut short (or missing) has no bytes to serve.
     */
    boolean heldAtOpen(long offset, long length) {
        int file = fileOf(offset);
        return file >= 0
                && file < lengthAtOpen.length
                && offset % config.fileSizeBytes() + length <= lengthAtOpen[file];
    }

    /** Whether I/O bypasses the page cache. */
    boolean direct() {
        return direct;
    }

    /** The file holding linear offset {@code offset}, created and preallocated if needed. */
    private int fdFor(long offset) throws IOException {
        int file = (int) (offset / config.fileSizeBytes());
        int fd = openFds.get(file);
        return fd >= 0 ? fd : createIfNeeded(file);
    }

    private synchronized int createIfNeeded(int file) throws IOException {
        if (fds[file] < 0) {
            boolean existed = Files.exists(paths[file]);
            open(file);
            if (!existed) {
                preallocate(file);
            }
            openFds.set(file, fds[file]);
        }
        return fds[file];
    }

    private void open(int file) throws IOException {
        String path = paths[file].toString();
        int flags = LibC.O_RDWR | LibC.O_CREAT | LibC.O_CLOEXEC;
        if (direct) {
            try {
                fds[file] = LibC.open(path, flags | LibC.O_DIRECT, MODE);
                return;
            } catch (PosixException e) {
                if (e.errno() != LibC.EINVAL) {
                    throw e;
                }
                direct = false;
                if (!warnedBuffered) {
                    warnedBuffered = true;
                    log.warn(
                            "the filesystem of {} does not support O_DIRECT; the NVMe tier uses buffered I/O "
                                    + "(slower, and it competes with the page cache)",
                            paths[file].getParent());
                }
            }
        }
        fds[file] = LibC.open(path, flags, MODE);
    }

    private void preallocate(int file) throws IOException {
        String path = paths[file].toString();
        try {
            LibC.fallocate(fds[file], 0, config.fileSizeBytes(), path);
        } catch (PosixException e) {
            if (e.errno() != LibC.EOPNOTSUPP) {
                closeQuietly(file);
                try {
                    Files.deleteIfExists(paths[file]);
                } catch (IOException ignored) {
                    // the error below says what went wrong
                }
                throw e;
            }
            if (!warnedTruncate) {
                warnedTruncate = true;
                log.warn(
                        "fallocate is not supported on {}; block files are sized with ftruncate and may run "
                                + "out of space on write",
                        paths[file].getParent());
            }
            LibC.ftruncate(fds[file], config.fileSizeBytes(), path);
        }
    }

    void write(long offset, MemorySegment aligned) throws IOException {
        int fd = fdFor(offset);
        LibC.pwriteFully(fd, aligned, offset % config.fileSizeBytes(), pathOf(offset));
    }

    void read(long offset, MemorySegment aligned) throws IOException {
        int fd = fdFor(offset);
        LibC.preadFully(fd, aligned, offset % config.fileSizeBytes(), pathOf(offset));
    }

    /** The file holding linear offset {@code offset} (created and preallocated if needed), for a device copier. */
    DeviceFileCopier.BlockFile fileAt(long offset) throws IOException {
        return new DeviceFileCopier.BlockFile(fdFor(offset), pathOf(offset), config.fileSizeBytes());
    }

    /** Makes the data of the file holding {@code offset} durable. */
    void sync(long offset) throws IOException {
        LibC.fdatasync(fdFor(offset), pathOf(offset));
    }

    /** Whether file {@code file} exists and is open (it was created and preallocated, or found at start). */
    boolean created(int file) {
        return openFds.get(file) >= 0;
    }

    /** The directory holding file {@code file}. */
    Path dirOf(int file) {
        return paths[file].getParent();
    }

    /** The file index of a linear offset. */
    int fileOf(long offset) {
        return (int) (offset / config.fileSizeBytes());
    }

    String pathOf(long offset) {
        return paths[fileOf(offset)].toString();
    }

    private void closeQuietly(int file) {
        if (fds[file] >= 0) {
            try {
                LibC.close(fds[file]);
            } catch (PosixException ignored) {
                // closing after a failure; the original error is what matters
            }
            fds[file] = -1;
            openFds.set(file, -1);
        }
    }

    @Override
    public synchronized void close() {
        for (int i = 0; i < fds.length; i++) {
            closeQuietly(i);
        }
    }
}
