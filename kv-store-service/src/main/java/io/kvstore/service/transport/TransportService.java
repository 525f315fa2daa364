package io.kvstore.service.transport;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.block.TierId;
import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.nixl.DevicePathChoice;
import io.kvstore.nixl.NixlBackendSelection;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.TransportUnavailableException;
import io.kvstore.service.transport.DataPlaneChoice.Decision;
import io.kvstore.service.transport.DataPlaneChoice.Plane;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.memory.UcxSharedMemoryProvider;
import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import io.kvstore.transfer.RemoteRegion;
import io.kvstore.transfer.TransferEngine;
import io.kvstore.transfer.nixl.NixlTransferEngine;
import io.kvstore.transfer.ucx.UcxSettings;
import io.kvstore.transfer.ucx.UcxTransferEngine;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one-sided data plane: the DRAM tier's whole memory registered with a NIXL agent (NIXL's UCX
 * backend, the region as {@code DRAM_SEG}) or with a direct UCX worker, so an engine that has the
 * agent's metadata or the worker's address and the region's descriptor READs leased blocks and WRITEs
 * reserved slots in place. {@link DataPlaneChoice} picks the library once at start-up; when neither can
 * run, every one-sided call is refused with the reason and blocks still travel over HTTP.
 */
public final class TransportService implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(TransportService.class);
    private static final AtomicInteger AGENTS = new AtomicInteger();

    /** The tier whose memory peers reach: DRAM is the one tier every configuration has. */
    public static final TierId TIER = TierId.DRAM;

    private final Decision decision;
    private final TransferEngine engine;
    private final UcxTransferEngine ucx;
    private final String unavailableReason;
    /** The region UCX allocated for the DRAM tier, when the tier's memory came from it. */
    private volatile LocalRegion allocated;

    private volatile LocalRegion region;
    private boolean ownsRegion;
    /** The device (HBM) tier's memory registered with the NIXL agent as VRAM_SEG, when it is. */
    private volatile LocalRegion deviceRegion;
    /** How the device tier reaches NVMe, once the engine is built. */
    private volatile DeviceStorage.View deviceStorage = DeviceStorage.View.noHbm();

    private volatile @Nullable Supplier<String> liveRoute;

    /**
     * A region as engines address it: the tier, its address in this process, length and key; over NIXL
     * also the segment type and device id an engine's NIXL agent puts in its remote descriptors.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record RegionView(
            String tier, long address, long length, String remoteKey, String segmentType, Long deviceId) {}

    /**
     * What {@code GET /v1/transport} answers: over direct UCX the worker address, over NIXL the agent's
     * metadata (for {@code loadRemoteMD}); both base64.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record View(
            String backend,
            String dataPlane,
            boolean available,
            String reason,
            String workerAddress,
            String agentMetadata,
            List<RegionView> regions) {}

    /** The data plane as health and {@code /admin/backends} show it. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record DataPlaneView(String plane, String backend, boolean available, String reason, String decision) {}

    /** Starts the chosen data plane; the DRAM tier is attached once it exists. */
    public TransportService(KvStoreProperties properties, BackendProbe backends) {
        this(
                properties,
                DataPlaneChoice.decide(
                        properties.transport().enabled(),
                        backends.resolved().enabled().contains("UCX"),
                        properties.transport().dataPlane(),
                        BackendProbe.nixlAvailability("UCX"),
                        Ucp.availability()));
    }

    TransportService(KvStoreProperties properties, Decision decision) {
        this.decision = decision;
        log.info(decision.summary());
        String reason = decision.enabled() ? null : decision.why();
        TransferEngine started = null;
        UcxTransferEngine direct = null;
        if (decision.plane() == Plane.NIXL) {
            String agent = "kvstore-" + ProcessHandle.current().pid() + "-" + AGENTS.incrementAndGet();
            try {
                started = new NixlTransferEngine(agent, Set.of("UCX"), Duration.ofSeconds(60));
            } catch (RuntimeException e) {
                reason = "NIXL failed to start: " + e.getMessage();
            }
        } else if (decision.plane() == Plane.UCX) {
            UcxSettings settings = UcxSettings.defaults();
            if (!properties.transport().ucxTls().isBlank()) {
                settings = settings.withTransports(properties.transport().ucxTls());
            }
            try {
                direct = UcxTransferEngine.create(settings);
                started = direct;
            } catch (RuntimeException e) {
                reason = "UCX failed to start: " + e.getMessage();
            }
        }
        if (started == null
                && decision.enabled()
                && properties.transport().dataPlane() != KvStoreProperties.Transport.DataPlane.AUTO) {
            // forced by name: coming up with the one-sided path off would hide it (configs/README.md)
            throw new IllegalStateException(
                    "kvstore.transport.data-plane=" + properties.transport().dataPlane() + " but " + reason
                            + "; fix it or set kvstore.transport.data-plane=auto");
        }
        if (reason != null) {
            log.info("one-sided transport unavailable: {}; blocks travel over HTTP only", reason);
        }
        this.engine = started;
        this.ucx = direct;
        this.unavailableReason = reason;
    }

    /**
     * The memory provider for the DRAM tier: over direct UCX with {@code host} configured, host memory
     * that UCX allocates as a shared segment (peers on this host then copy straight into and out of it);
     * otherwise the provider configured (NIXL registers whatever memory the tier has).
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
        if (engine == null) {
            return;
        }
        LocalRegion shared = allocated;
        if (shared != null && shared.segment().address() == dram.region().address()) {
            region = shared;
        } else {
            region = engine.register(dram.region(), MemoryKind.DRAM);
            ownsRegion = true;
        }
        log.info(
                "one-sided transport: {} with the {} MiB {} tier {}",
                engine.backend(),
                dram.region().byteSize() >> 20,
                TIER,
                decision.plane() == Plane.NIXL
                        ? "registered as DRAM_SEG"
                        : ownsRegion ? "registered" : "in UCX shared memory");
    }

    /**
     * Decides how the device tier meets NIXL and storage ({@link DevicePathChoice}), logs it, and registers
     * the tier's device memory with the NIXL agent as {@code VRAM_SEG} when the tier is CUDA-backed and the
     * data plane is NIXL, so an engine's agent can reach it; the region is then listed in {@link #view()}.
     */
    public DevicePathChoice.Decision attachDevice(DeviceTier hbm, NixlBackendSelection.Resolved backends) {
        DevicePathChoice.Decision d = DevicePathChoice.decide(
                !hbm.emulated(), decision.plane() == Plane.NIXL && engine != null, backends, CuFile.availability());
        log.info(d.summary());
        if (d.registerVram()) {
            deviceRegion = engine.register(hbm.region(), MemoryKind.VRAM);
            log.info(
                    "one-sided transport: the {} MiB HBM tier registered as VRAM_SEG",
                    hbm.region().byteSize() >> 20);
        }
        return d;
    }

    /**
     * Decides the device path of an HBM tier that is not in device memory (an emulated provider): always
     * through host memory, never registered as VRAM; logged like {@link #attachDevice}.
     */
    public DevicePathChoice.Decision decideEmulatedDevice(NixlBackendSelection.Resolved backends) {
        DevicePathChoice.Decision d = DevicePathChoice.decide(
                false, decision.plane() == Plane.NIXL && engine != null, backends, CuFile.availability());
        log.info(d.summary());
        return d;
    }

    /** Records the device tier's path to NVMe as the engine runs it, for health and {@code /admin/backends}. */
    public void showDeviceStorage(DeviceStorage.View view) {
        this.deviceStorage = view;
        this.liveRoute = null;
    }

    /**
     * As {@link #showDeviceStorage(DeviceStorage.View)}, the route read from {@code route} each time it is
     * shown: the engine's direct path says there whether its copier is failing.
     */
    public void showDeviceStorage(DeviceStorage.View view, Supplier<String> route) {
        this.deviceStorage = view;
        this.liveRoute = route;
    }

    /** The device tier's path to NVMe: what was decided and what the engine does. */
    public DeviceStorage.View deviceStorage() {
        DeviceStorage.View view = deviceStorage;
        Supplier<String> route = liveRoute;
        return route == null ? view : view.withRoute(route.get());
    }

    public boolean available() {
        return engine != null && region != null;
    }

    /** @throws TransportUnavailableException with the reason when there is no one-sided transport */
    public void requireAvailable() {
        if (!available()) {
            throw new TransportUnavailableException(
                    unavailableReason == null ? "the DRAM tier is not attached" : unavailableReason);
        }
    }

    /** The backend label for metrics: {@code NIXL/UCX} or {@code UCX}. */
    public String backend() {
        return engine != null ? engine.backend() : "UCX";
    }

    public DataPlaneView dataPlane() {
        return new DataPlaneView(
                decision.plane() == null ? "none" : decision.plane().name(),
                engine == null ? null : engine.backend(),
                available(),
                available() ? null : unavailableReason == null ? "the DRAM tier is not attached" : unavailableReason,
                decision.summary());
    }

    public View view() {
        String plane = decision.plane() == null ? "none" : decision.plane().name();
        if (!available()) {
            return new View(backend(), plane, false, dataPlane().reason(), null, null, List.of());
        }
        RemoteRegion r = region.describe();
        String address = Base64.getEncoder().encodeToString(engine.localAddress());
        boolean nixl = decision.plane() == Plane.NIXL;
        List<RegionView> regions = new java.util.ArrayList<>();
        regions.add(new RegionView(
                TIER.name(),
                r.address(),
                r.length(),
                Base64.getEncoder().encodeToString(r.remoteKey()),
                nixl ? "DRAM_SEG" : null,
                nixl ? 0L : null));
        LocalRegion device = deviceRegion;
        if (device != null) {
            RemoteRegion v = device.describe();
            regions.add(new RegionView(
                    TierId.HBM.name(),
                    v.address(),
                    v.length(),
                    Base64.getEncoder().encodeToString(v.remoteKey()),
                    "VRAM_SEG",
                    0L));
        }
        return new View(
                engine.backend(),
                plane,
                true,
                null,
                nixl ? null : address,
                nixl ? address : null,
                List.copyOf(regions));
    }

    /** The address a peer uses for {@code offset} bytes into the registered tier. */
    public long address(long offset) {
        requireAvailable();
        return region.segment().address() + offset;
    }

    /**
     * Releases the registrations of tier memory this service made (the DRAM tier's, when the tier allocated it;
     * the HBM tier's VRAM_SEG), before the engine frees that memory at shutdown: a peer's one-sided access after
     * this fails at the transport rather than reaching memory the process gave back. A region UCX allocated for
     * the tier is the tier's own and goes with it.
     */
    public synchronized void detach() {
        LocalRegion device = deviceRegion;
        if (device != null) {
            deviceRegion = null;
            device.close();
            log.info("one-sided transport: the HBM tier's registration released before the tier closes");
        }
        LocalRegion dram = region;
        if (ownsRegion && dram != null) {
            ownsRegion = false;
            dram.close();
            log.info("one-sided transport: the {} tier's registration released before the tier closes", TIER);
        }
    }

    @Override
    public void close() {
        if (engine != null) {
            detach(); // done already at an orderly shutdown (TransportDetach)
            engine.close(); // a UCX-allocated tier region was freed with its tier, which closes first
        }
    }
}
