package io.kvstore.tier.memory;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.libc.LibC;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Host memory allocated by UCX ({@code ucp_mem_map} with allocation) for a tier that engines reach
 * one-sided: UCX backs it with a shared segment that a peer on the same host maps, so a peer's READ or
 * WRITE is one plain copy, where memory merely registered is reached through cma or UCX's emulation (2 to
 * 6 times slower here, docs/benchmarks.md). The service uses it for the DRAM tier when its one-sided
 * transport is on and the tier asks for {@code host} memory; the region comes already registered.
 *
 * <p>The allocation itself is the transfer engine's ({@code UcxTransferEngine.allocate}), handed in as a
 * {@link SharedAllocator} by the wiring, so tiers do not depend on the transfer layer.
 */
public final class UcxSharedMemoryProvider implements MemoryProvider {

    public static final String NAME = "host-ucx";

    private static final Logger log = LoggerFactory.getLogger(UcxSharedMemoryProvider.class);

    /** Memory allocated and registered for one-sided access, and how to deregister and free it. */
    public record SharedMemory(MemorySegment segment, Runnable free) {}

    /** Allocates {@code bytes} of host memory registered with a transfer engine (UCX). */
    @FunctionalInterface
    public interface SharedAllocator {
        SharedMemory allocate(long bytes);
    }

    private final SharedAllocator allocator;

    public UcxSharedMemoryProvider(SharedAllocator allocator) {
        this.allocator = allocator;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Availability availability() {
        return Availability.available("host memory allocated and registered by the UCX transfer engine");
    }

    @Override
    public MemoryRegion allocate(long bytes) {
        if (bytes <= 0 || bytes % 4096 != 0) {
            throw new IllegalArgumentException("region size must be a positive multiple of 4 KiB, got " + bytes);
        }
        SharedMemory memory = allocator.allocate(bytes);
        int errno = LibC.mlock(memory.segment());
        if (errno != 0) {
            log.warn(
                    "UCX-allocated tier memory of {} MiB is not locked in RAM (mlock failed, errno {}); raise "
                            + "RLIMIT_MEMLOCK or grant CAP_IPC_LOCK to keep block memory from swapping",
                    bytes >> 20,
                    errno);
        }
        return new MemoryRegion(memory.segment(), NAME, errno == 0, memory.free());
    }
}
