package io.kvstore.service.transport;

import io.kvstore.block.TierId;
import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.service.admin.BackendProbe;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.TransportUnavailableException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.memory.UcxSharedMemoryProvider;
import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import io.kvstore.transfer.RemoteRegion;
import io.kvstore.transfer.ucx.UcxSettings;
import io.kvstore.transfer.ucx.UcxTransferEngine;
import java.util.Base64;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one-sided data plane: a UCX worker with the DRAM tier's whole memory registered, so an engine
 * that has the worker address and the region key READs leased blocks and WRITEs reserved slots in place.
 * Started when UCX is among the selected backends and libucp loads; otherwise every one-sided call is
 * refused with the reason, and blocks still travel over HTTP.
 */
public final class TransportService implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(TransportService.class);

    /** The tier whose memory peers reach: DRAM is the one tier every configuration has. */
    public static final TierId TIER = TierId.DRAM;

    private final UcxTransferEngine ucx;
    private final String unavailableReason;
    /** The region UCX allocated for the DRAM tier, when the tier's memory came from it. */
    private volatile LocalRegion allocated;

    private volatile LocalRegion region;
    private boolean ownsRegion;

    /** A region as engines address it: the tier, its address in this process, length and packed key. */
    public record RegionView(String tier, long address, long length, String remoteKey) {}

    /** What {@code GET /v1/transport} answers. */
    @com.fasterxml.jackson.annotation.JsonInclude(com.fasterxml.jackson.annotation.JsonInclude.Include.NON_NULL)
    public record View(
            String backend, boolean available, String reason, String workerAddress, List<RegionView> regions) {}

    /** Starts the UCX worker when UCX is selected and loads; the DRAM tier is attached once it exists. */
    public TransportService(KvStoreProperties properties, BackendProbe backends) {
        String reason = null;
        if (!properties.transport().enabled()) {
            reason = "the one-sided transport is disabled (kvstore.transport.enabled=false)";
        } else if (!backends.resolved().enabled().contains("UCX")) {
            reason = "UCX is not among the selected backends "
                    + backends.resolved().enabled();
        } else if (!Ucp.isAvailable()) {
            reason = "libucp is unavailable: " + Ucp.availability().detail();
        }
        UcxTransferEngine started = null;
        if (reason == null) {
            UcxSettings settings = UcxSettings.defaults();
            if (!properties.transport().ucxTls().isBlank()) {
                settings = settings.withTransports(properties.transport().ucxTls());
            }
            try {
                started = UcxTransferEngine.create(settings);
            } catch (RuntimeException e) {
                reason = "UCX failed to start: " + e.getMessage();
            }
        }
        if (reason != null) {
            log.info("one-sided transport unavailable: {}; blocks travel over HTTP only", reason);
        }
        this.ucx = started;
        this.unavailableReason = reason;
    }

    /**
     * The memory provider for the DRAM tier: for {@code host} with the transport on, host memory that UCX
     * allocates as a shared segment (peers on this host then copy straight into and out of it); otherwise
     * the provider configured.
     */
    public MemoryProvider dramProvider(String configured) {
        if (ucx != null && HostMemoryProvider.NAME.equals(configured)) {
            return new UcxSharedMemoryProvider(bytes -> {
                LocalRegion r = ucx.allocate(bytes);
                allocated = r;
                return new UcxSharedMemoryProvider.SharedMemory(r.segment(), r::close);
            });
        }
        return MemoryProvider.named(configured);
    }

    /** Publishes the DRAM tier to peers: its UCX-allocated region, or its memory registered now. */
    public void attach(MemoryTier dram) {
        if (ucx == null) {
            return;
        }
        LocalRegion shared = allocated;
        if (shared != null && shared.segment().address() == dram.region().address()) {
            region = shared;
        } else {
            region = ucx.register(dram.region(), MemoryKind.DRAM);
            ownsRegion = true;
        }
        log.info(
                "one-sided transport: UCX worker with the {} MiB {} tier {}",
                dram.region().byteSize() >> 20,
                TIER,
                ownsRegion ? "registered" : "in UCX shared memory");
    }

    public boolean available() {
        return ucx != null && region != null;
    }

    /** @throws TransportUnavailableException with the reason when there is no one-sided transport */
    public void requireAvailable() {
        if (!available()) {
            throw new TransportUnavailableException(
                    unavailableReason == null ? "the DRAM tier is not attached" : unavailableReason);
        }
    }

    public View view() {
        if (!available()) {
            return new View("UCX", false, unavailableReason, null, List.of());
        }
        RemoteRegion r = region.describe();
        return new View(
                ucx.backend(),
                true,
                null,
                Base64.getEncoder().encodeToString(ucx.localAddress()),
                List.of(new RegionView(
                        TIER.name(),
                        r.address(),
                        r.length(),
                        Base64.getEncoder().encodeToString(r.remoteKey()))));
    }

    /** The address a peer uses for {@code offset} bytes into the registered tier. */
    public long address(long offset) {
        requireAvailable();
        return region.segment().address() + offset;
    }

    @Override
    public void close() {
        if (ucx != null) {
            if (ownsRegion && region != null) {
                region.close();
            }
            ucx.close(); // a UCX-allocated tier region was freed with its tier, which closes first
        }
    }
}
