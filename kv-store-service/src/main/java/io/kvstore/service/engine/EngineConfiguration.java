package io.kvstore.service.engine;

import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.ffm.Availability;
import io.kvstore.hashing.VllmHasher;
import io.kvstore.nixl.DevicePathChoice;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.BodySizeLimitFilter;
import io.kvstore.service.events.EngineEventsTee;
import io.kvstore.service.events.KvEventPublisher;
import io.kvstore.service.local.LocalDataPath;
import io.kvstore.service.metrics.EngineMetrics;
import io.kvstore.service.metrics.TierGauges;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.quota.FairLookups;
import io.kvstore.service.quota.ReservationLedger;
import io.kvstore.service.quota.TenantUsage;
import io.kvstore.service.transport.BackendProbe;
import io.kvstore.service.transport.DeviceStorage;
import io.kvstore.service.transport.TransportService;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.device.CudaDeviceCopier;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.memory.SharedFileMemoryProvider;
import io.kvstore.tier.nvme.NvmeTier;
import io.kvstore.tier.nvme.NvmeTierConfig;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.json.JsonMapper;

/**
 * Builds the tier engine from {@link KvStoreProperties}: HBM when configured, DRAM always, NVMe under
 * the data directory unless disabled. Each tier is a {@code BlockTier}; the engine owns and closes them.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(KvStoreProperties.class)
public class EngineConfiguration {

    @Bean
    EngineMetrics engineMetrics(MeterRegistry registry) {
        return new EngineMetrics(registry);
    }

    @Bean
    TenantUsage tenantUsage(KvStoreProperties properties, NamespaceRegistry namespaces, MeterRegistry registry) {
        return new TenantUsage(properties, namespaces::owner, registry);
    }

    @Bean(destroyMethod = "close")
    TierEngine tierEngine(
            KvStoreProperties properties,
            EngineMetrics metrics,
            TenantUsage tenantUsage,
            TransportService transport,
            BackendProbe backends,
            LocalDataPath local,
            ObjectProvider<KvEventPublisher> kvEvents)
            throws IOException {
        List<BlockTier> tiers = new ArrayList<>();
        SharedFileMemoryProvider shared = null;
        Map<TierId, TierSettings> settings = new EnumMap<>(TierId.class);
        try {
            var t = properties.tiers();
            if (t.hbm() != null) {
                tiers.add(hbmTier(t.hbm()));
                settings.put(TierId.HBM, settingsOf(t.hbm()));
            }
            var dram = t.dram();
            shared = sharedDram(properties, local);
            MemoryProvider dramProvider = shared != null ? shared : transport.dramProvider(dram.provider());
            if (!dramProvider.hostAccessible()) {
                throw new IllegalStateException("kvstore.tiers.dram.provider=" + dram.provider()
                        + " gives memory only CUDA can copy; a DRAM tier copies with the CPU: use host, cuda-pinned"
                        + " or emulated-device");
            }
            requireAvailable("kvstore.tiers.dram.provider", dram.provider(), dramProvider.availability());
            tiers.add(new MemoryTier(
                    TierId.DRAM,
                    dramProvider,
                    dram.capacity().toBytes(),
                    dram.slabSize().toBytes()));
            settings.put(TierId.DRAM, settingsOf(t.dram()));
            if (t.nvme().enabled()) {
                tiers.add(nvmeTier(properties));
                settings.put(
                        TierId.NVME,
                        new TierSettings(
                                t.nvme().policy(),
                                t.nvme().highWatermark(),
                                t.nvme().lowWatermark(),
                                false));
            }
        } catch (IOException | RuntimeException e) {
            tiers.forEach(BlockTier::close);
            throw e;
        }
        DeviceStorage.Opened deviceFiles;
        try {
            deviceFiles = deviceStorage(tiers, properties, transport, backends);
        } catch (RuntimeException e) {
            tiers.forEach(BlockTier::close);
            throw e;
        }
        KvEventPublisher publisher = kvEvents.getIfAvailable();
        // each tenant's bytes per tier follow the engine's copies (quotas)
        EngineEvents counted = new EngineEventsTee(metrics, tenantUsage);
        EngineEvents events = publisher == null ? counted : new EngineEventsTee(counted, publisher);
        TierEngine engine = new TierEngine(
                tiers,
                settings,
                properties.leaseTimeout(),
                events,
                Clock.systemUTC(),
                deviceFiles.copier(),
                properties.tiers().nvme().deviceReadBack());
        if (deviceFiles.copier() != null) {
            transport.showDeviceStorage(
                    transport.deviceStorage(),
                    () -> DeviceStorage.direct(Objects.requireNonNull(engine.deviceStorageRoute())));
        }
        if (publisher != null) {
            publisher.resyncFrom(
                    engine::blocks, engine::info); // after an AllBlocksCleared, re-announce what the tiers hold
        }
        MemoryTier dramTier = (MemoryTier) engine.tier(TierId.DRAM);
        if (shared != null && shared.file() != null) {
            local.attach(shared.file(), dramTier.region().byteSize(), shared.group());
        }
        // with the tier in a shared file, UCX registers that memory rather than allocating its own
        transport.attach(dramTier);
        LoggerFactory.getLogger(EngineConfiguration.class)
                .info(
                        "block checksums: CRC32C by {}; vLLM block hashes: {}",
                        Checksums.implementation(),
                        VllmHasher.sha256Implementation());
        return engine;
    }

    /**
     * Decides the HBM tier's path to NVMe (registering a CUDA-backed tier as VRAM_SEG where the data plane
     * is NIXL), opens the GPUDirect Storage copier it names, and shows the result (completed with the
     * engine's route once the engine took the copier).
     */
    private static DeviceStorage.Opened deviceStorage(
            List<BlockTier> tiers, KvStoreProperties properties, TransportService transport, BackendProbe backends) {
        BlockTier hbm =
                tiers.stream().filter(t -> t.id() == TierId.HBM).findFirst().orElse(null);
        if (hbm == null) {
            return new DeviceStorage.Opened(null, null);
        }
        DeviceStorage.Opened opened;
        DevicePathChoice.Decision decision;
        String provider;
        if (hbm instanceof DeviceTier device) {
            decision = transport.attachDevice(device, backends.resolved());
            opened = DeviceStorage.open(
                    decision,
                    device,
                    properties.tiers().nvme().enabled() ? nvmeConfig(properties).paths() : List.of());
            provider = device.provider();
        } else {
            decision = transport.decideEmulatedDevice(backends.resolved());
            opened = new DeviceStorage.Opened(null, DeviceStorage.THROUGH_DRAM);
            provider = hbm.provider() + (hbm instanceof MemoryTier m && m.emulated() ? " (emulated, not a GPU)" : "");
        }
        transport.showDeviceStorage(DeviceStorage.View.of(provider, decision, opened.route()));
        return opened;
    }

    /**
     * Releases the tiers' registrations with the one-sided transport ({@link TransportService#detach}) before
     * the engine frees their memory: this bean needs the engine, so Spring destroys it before the engine, while
     * the transport, which the engine needs, closes after both.
     */
    @Bean
    TransportDetach transportDetach(TransportService transport, TierEngine engine) {
        return new TransportDetach(transport);
    }

    /** {@link #transportDetach}: its close detaches the transport. */
    record TransportDetach(TransportService transport) implements AutoCloseable {
        @Override
        public void close() {
            transport.detach();
        }
    }

    @Bean
    TierGauges tierGauges(TierEngine engine) {
        return new TierGauges(engine);
    }

    @Bean
    BackendProbe backendProbe(KvStoreProperties properties) {
        return new BackendProbe(properties, System.getenv());
    }

    @Bean
    BodySizeLimitFilter bodySizeLimitFilter(KvStoreProperties properties) {
        return new BodySizeLimitFilter(
                properties.maxRequestSize().toBytes(),
                properties.limits().maxJsonBody().toBytes());
    }

    @Bean(destroyMethod = "close")
    TransportService transportService(KvStoreProperties properties, BackendProbe backends) {
        return new TransportService(properties, backends);
    }

    @Bean
    NamespaceRegistry namespaceRegistry(KvStoreProperties properties, JsonMapper json) {
        // a block must fit one slab of every tier it may land in
        var t = properties.tiers();
        long max = t.dram().slabSize().toBytes();
        String setting = "kvstore.tiers.dram.slab-size";
        if (t.hbm() != null && t.hbm().slabSize().toBytes() < max) {
            max = t.hbm().slabSize().toBytes();
            setting = "kvstore.tiers.hbm.slab-size";
        }
        if (t.nvme().enabled() && t.nvme().slabSize().toBytes() < max) {
            max = t.nvme().slabSize().toBytes();
            setting = "kvstore.tiers.nvme.slab-size";
        }
        // the declarations (and issued tokens) live there with or without the NVMe tier: a directory that cannot
        // be made stops start-up naming the property, rather than every declaration answering 507 later
        try {
            java.nio.file.Files.createDirectories(properties.dataDir());
        } catch (IOException e) {
            throw new IllegalStateException(
                    "kvstore.data-dir: cannot use " + properties.dataDir() + " (" + e.getMessage() + ")", e);
        }
        return new NamespaceRegistry(properties.dataDir(), json, max, setting);
    }

    @Bean
    ReservationLedger reservationLedger(KvStoreProperties properties) {
        return new ReservationLedger(properties, Clock.systemUTC());
    }

    @Bean
    FairLookups fairLookups(KvStoreProperties properties) {
        FairLookups fair = properties.limits().fairLookups() ? FairLookups.forCarriers() : new FairLookups(0);
        LoggerFactory.getLogger(EngineConfiguration.class)
                .info(
                        fair.turns() > 0
                                ? "lookups take turns by tenant, {} at a time (kvstore.limits.fair-lookups)"
                                : "lookups do not take turns by tenant ({} turns: kvstore.limits.fair-lookups"
                                        + " off, or one carrier thread)",
                        fair.turns());
        return fair;
    }

    @Bean
    LocalDataPath localDataPath() {
        return new LocalDataPath("the same-host data path is off (kvstore.local.enabled=false)");
    }

    /** The DRAM tier's provider when the same-host path is on and the tier is plain host memory; else null. */
    private static SharedFileMemoryProvider sharedDram(KvStoreProperties properties, LocalDataPath local) {
        var l = properties.local();
        if (!l.enabled()) {
            return null;
        }
        String configured = properties.tiers().dram().provider();
        if (!HostMemoryProvider.NAME.equals(configured)) {
            local.unavailable("the DRAM tier's provider is " + configured + ", not host memory a file can hold");
            return null;
        }
        var provider = new SharedFileMemoryProvider(l.directory(), l.group());
        if (!provider.availability().available()) {
            throw new IllegalStateException(
                    "kvstore.local.directory: " + provider.availability().detail());
        }
        return provider;
    }

    /**
     * The HBM tier: on {@code cuda-device}, GPU memory (device 0 of those CUDA_VISIBLE_DEVICES shows)
     * moved by CUDA copies; otherwise a memory tier the CPU copies ({@code emulated-device} for demos).
     */
    private static BlockTier hbmTier(KvStoreProperties.MemoryTier p) {
        if (CudaDeviceCopier.NAME.equals(p.provider())) {
            requireAvailable("kvstore.tiers.hbm.provider", p.provider(), CudaDeviceCopier.availability());
            return new DeviceTier(
                    TierId.HBM,
                    new CudaDeviceCopier(0, p.capacity().toBytes()),
                    p.slabSize().toBytes());
        }
        MemoryProvider provider = MemoryProvider.named(p.provider());
        requireAvailable("kvstore.tiers.hbm.provider", p.provider(), provider.availability());
        return new MemoryTier(
                TierId.HBM, provider, p.capacity().toBytes(), p.slabSize().toBytes());
    }

    /**
     * A tier's provider that cannot run here (CUDA without a driver or GPU) stops start-up with one line
     * naming the setting, under "APPLICATION FAILED TO START" ({@code ConfigurationFailureAnalyzer}).
     */
    private static void requireAvailable(String setting, String provider, Availability availability) {
        if (!availability.available()) {
            throw new IllegalStateException(
                    setting + "=" + provider + " but it is unavailable here: " + availability.detail());
        }
    }

    private static TierSettings settingsOf(KvStoreProperties.MemoryTier p) {
        return new TierSettings(p.policy(), p.highWatermark(), p.lowWatermark(), p.promoteOnHit());
    }

    /**
     * The NVMe tier; a directory it cannot use (missing rights, a file in its place, a read-only filesystem)
     * stops start-up naming the property that chose it, as any other bad {@code kvstore.*} value does.
     */
    private static NvmeTier nvmeTier(KvStoreProperties properties) throws IOException {
        try {
            return new NvmeTier(nvmeConfig(properties));
        } catch (java.nio.file.FileSystemException e) {
            String property = properties.tiers().nvme().paths().isEmpty()
                    ? "kvstore.data-dir: cannot use " + properties.dataDir()
                    : "kvstore.tiers.nvme.paths: cannot use "
                            + properties.tiers().nvme().paths();
            throw new IllegalStateException(property + " (" + e.getMessage() + ")", e);
        }
    }

    static NvmeTierConfig nvmeConfig(KvStoreProperties properties) {
        var n = properties.tiers().nvme();
        List<Path> paths = n.paths().isEmpty() ? List.of(properties.dataDir().resolve("nvme")) : n.paths();
        return new NvmeTierConfig(
                paths,
                n.capacity().toBytes(),
                n.fileSize().toBytes(),
                n.slabSize().toBytes(),
                n.ioThreads());
    }
}
