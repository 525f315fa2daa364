package io.kvstore.tier.memory;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.libc.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Page-aligned off-heap host memory, locked in RAM with {@code mlock} when the process may lock that
 * much (RLIMIT_MEMLOCK, CAP_IPC_LOCK); when it may not, the region is used unlocked and one line says so.
 * Locked pages never swap, so a block read never stalls on the disk.
 */
public final class HostMemoryProvider implements MemoryProvider {

    public static final String NAME = "host";

    private static final Logger log = LoggerFactory.getLogger(HostMemoryProvider.class);
    private static final long PAGE = 4096;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Availability availability() {
        return Availability.available("page-aligned host memory, mlock when allowed");
    }

    @Override
    @SuppressWarnings("MustBeClosedChecker") // the arena lives as long as the region, which closes it
    public MemoryRegion allocate(long bytes) {
        if (bytes <= 0 || bytes % PAGE != 0) {
            throw new IllegalArgumentException("host region size must be a positive multiple of 4 KiB, got " + bytes);
        }
        Arena arena = Arena.ofShared();
        MemorySegment segment;
        try {
            segment = arena.allocate(bytes, PAGE);
        } catch (OutOfMemoryError | IllegalArgumentException e) {
            arena.close();
            throw new IllegalStateException("cannot allocate " + bytes + " bytes of host memory: " + e.getMessage(), e);
        }
        int errno = LibC.mlock(segment);
        if (errno != 0) {
            log.warn(
                    "host memory of {} MiB is not locked in RAM (mlock failed, errno {}); raise RLIMIT_MEMLOCK "
                            + "or grant CAP_IPC_LOCK to keep block memory from swapping",
                    bytes >> 20,
                    errno);
        }
        // munlock is implicit: freeing the pages when the arena closes releases the lock.
        return new MemoryRegion(segment, NAME, errno == 0, arena::close);
    }
}
