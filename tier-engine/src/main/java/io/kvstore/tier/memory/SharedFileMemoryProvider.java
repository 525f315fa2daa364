package io.kvstore.tier.memory;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.libc.LibC;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Host memory that other processes on this host may map: a file on a memory file system ({@code /dev/shm},
 * tmpfs), created exclusively with mode {@code 0600} (owner only) or, when a group is named, {@code 0660}
 * with that group, given all its pages, then mapped shared and locked like {@link HostMemoryProvider}'s
 * memory. Same-host engines that the file's permissions admit map the file and copy blocks into reserved
 * slots and out of leased ones themselves, with no copy through the service. The file is named {@code
 * kvstore-dram-<pid>}; it is deleted when the region closes, and files a crashed kvstore left behind (their
 * process gone) are deleted when the next one starts in the same directory, so tmpfs memory does not leak
 * across crashes.
 */
public final class SharedFileMemoryProvider implements MemoryProvider {

    public static final String NAME = "host-shared";

    private static final Logger log = LoggerFactory.getLogger(SharedFileMemoryProvider.class);
    private static final String PREFIX = "kvstore-dram-";
    private static final long PAGE = 4096;

    private final Path directory;
    private final @Nullable String group;
    private volatile @Nullable Path file;

    /**
     * @param directory a directory on a memory file system (tmpfs), e.g. {@code /dev/shm}
     * @param group the group whose processes may map the memory too; null or blank for the owner only
     */
    public SharedFileMemoryProvider(Path directory, @Nullable String group) {
        this.directory = directory;
        this.group = group == null || group.isBlank() ? null : group;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Availability availability() {
        if (!Files.isDirectory(directory)) {
            return Availability.unavailable(directory + " is not a directory");
        }
        if (!Files.isWritable(directory)) {
            return Availability.unavailable(directory + " is not writable");
        }
        return Availability.available("host memory in a shared file under " + directory);
    }

    /** The file backing the last allocation, which local clients open and map; null before one. */
    public @Nullable Path file() {
        return file;
    }

    /** The group admitted besides the owner, or null for owner only. */
    public @Nullable String group() {
        return group;
    }

    @Override
    @SuppressWarnings("MustBeClosedChecker") // the arena lives as long as the region, which closes it
    public MemoryRegion allocate(long bytes) {
        if (bytes <= 0 || bytes % PAGE != 0) {
            throw new IllegalArgumentException("region size must be a positive multiple of 4 KiB, got " + bytes);
        }
        removeStaleFiles();
        Path path = directory.resolve(PREFIX + ProcessHandle.current().pid());
        Arena arena = Arena.ofShared();
        try {
            Files.deleteIfExists(path); // a file of an earlier run of this very pid (containers reuse pids)
            // exclusive create: never follows or reuses a file someone else placed here
            Files.createFile(
                    path,
                    PosixFilePermissions.asFileAttribute(
                            Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)));
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
            if (group != null) {
                GroupPrincipal principal =
                        FileSystems.getDefault().getUserPrincipalLookupService().lookupPrincipalByGroupName(group);
                Files.getFileAttributeView(
                                path, java.nio.file.attribute.PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                        .setGroup(principal);
                Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-rw----"));
            }
            allocatePages(path, bytes);
            MemorySegment segment;
            try (FileChannel channel = FileChannel.open(
                    path, StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
                segment = channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            }
            int errno = LibC.mlock(segment);
            if (errno != 0) {
                log.warn(
                        "shared tier memory of {} MiB is not locked in RAM (mlock failed, errno {}); raise "
                                + "RLIMIT_MEMLOCK or grant CAP_IPC_LOCK to keep block memory from swapping",
                        bytes >> 20,
                        errno);
                segment.load(); // maps every page now, as mlock would have, instead of on each first read
            }
            file = path;
            log.info(
                    "tier memory of {} MiB shared through {} ({})",
                    bytes >> 20,
                    path,
                    group == null ? "owner only, mode 0600" : "owner and group " + group + ", mode 0660");
            return new MemoryRegion(segment, NAME, errno == 0, () -> {
                arena.close();
                try {
                    Files.deleteIfExists(path);
                } catch (IOException e) {
                    log.warn("could not delete the shared tier file {}: {}", path, e.toString());
                }
            });
        } catch (IOException | RuntimeException e) {
            arena.close();
            try {
                Files.deleteIfExists(path);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw new IllegalStateException(
                    "cannot create " + bytes + " bytes of shared memory at " + path + ": " + e.getMessage(), e);
        }
    }

    /**
     * Gives the file all its pages now ({@code fallocate}), zeroed, instead of leaving it sparse: a memory file
     * system short of room then refuses the tier at start-up with ENOSPC, where a sparse file would kill the
     * process that first writes a page it cannot get (SIGBUS), and a client's first copy into a slot takes no
     * page fault to allocate and zero the page (clients map the file with MAP_POPULATE).
     */
    private static void allocatePages(Path path, long bytes) throws IOException {
        int fd = LibC.open(path.toString(), LibC.O_RDWR | LibC.O_CLOEXEC, 0);
        try {
            LibC.fallocate(fd, 0, bytes, path.toString());
        } finally {
            LibC.close(fd);
        }
    }

    /** Deletes files of kvstore processes that no longer run (a crash skips the region's close). */
    private void removeStaleFiles() {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, PREFIX + "*")) {
            for (Path stale : files) {
                String suffix = stale.getFileName().toString().substring(PREFIX.length());
                long pid;
                try {
                    pid = Long.parseLong(suffix);
                } catch (NumberFormatException e) {
                    continue;
                }
                if (pid == ProcessHandle.current().pid()
                        || ProcessHandle.of(pid).isPresent()) {
                    continue;
                }
                try {
                    Files.deleteIfExists(stale);
                    log.info("deleted {}, left behind by kvstore process {} which no longer runs", stale, pid);
                } catch (IOException e) {
                    log.debug("could not delete {}: {}", stale, e.toString());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + directory, e);
        }
    }
}
