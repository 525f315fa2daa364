package io.kvstore.tier.memory;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.libc.LibC;
import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.ucx.UcxTransferEngine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Host memory allocated by UCX ({@code ucp_mem_map} with allocation) for a tier that engines reach
 * one-sided: UCX backs it with a shared segment that a peer on the same host maps, so a peer's READ or
 * WRITE is one plain copy, where memory merely registered is reached through cma or UCX's emulation (2 to
 * 6 times slower here, docs/benchmarks.md). The service uses it for the DRAM tier when its one-sided
 * transport is on and the tier asks for {@code host} memory; the region comes already registered.
 */
public final class UcxSharedMemoryProvider implements MemoryProvider {

    public static final String NAME = "host-ucx";

    private static final Logger log = LoggerFactory.getLogger(UcxSharedMemoryProvider.class);

    private final UcxTransferEngine ucx;
    private volatile LocalRegion registered;

    public UcxSharedMemoryProvider(UcxTransferEngine ucx) {
        this.ucx = ucx;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Availability availability() {
        return Availability.available("host memory allocated and registered by UCX " + ucx.backend());
    }

    @Override
    public MemoryRegion allocate(long bytes) {
        if (bytes <= 0 || bytes % 4096 != 0) {
            throw new IllegalArgumentException("region size must be a positive multiple of 4 KiB, got " + bytes);
        }
        LocalRegion region = ucx.allocate(bytes);
        int errno = LibC.mlock(region.segment());
        if (errno != 0) {
            log.warn(
                    "UCX-allocated tier memory of {} MiB is not locked in RAM (mlock failed, errno {}); raise "
                            + "RLIMIT_MEMLOCK or grant CAP_IPC_LOCK to keep block memory from swapping",
                    bytes >> 20,
                    errno);
        }
        registered = region;
        return new MemoryRegion(region.segment(), NAME, errno == 0, region::close);
    }

    /** The registered region of the last allocation, for publishing to peers; null before one. */
    public LocalRegion registeredRegion() {
        return registered;
    }
}
