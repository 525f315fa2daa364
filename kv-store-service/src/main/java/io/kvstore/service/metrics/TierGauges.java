package io.kvstore.service.metrics;

import io.kvstore.block.TierId;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierStats;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.ToDoubleFunction;

/**
 * Gauges read from the engine when scraped: per-tier capacity (configured and usable now), use, block count,
 * whether it is degraded and how many writes its storage refused for want of space, and active leases.
 */
public final class TierGauges implements MeterBinder {

    private final TierEngine engine;

    public TierGauges(TierEngine engine) {
        this.engine = engine;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (TierId tier : engine.tierIds()) {
            gauge(
                    registry,
                    "kvstore.tier.capacity.bytes",
                    "Bytes the tier is configured to hold",
                    tier,
                    TierStats::capacityBytes);
            gauge(
                    registry,
                    "kvstore.tier.capacity.effective.bytes",
                    "Bytes the tier can hold now: less than its capacity while its filesystem is out of space",
                    tier,
                    TierStats::usableBytes);
            gauge(
                    registry,
                    "kvstore.tier.degraded",
                    "1 while the tier is degraded (shrunk by a full filesystem, or demotion out of it failing)",
                    tier,
                    s -> s.degraded() == null ? 0 : 1);
            FunctionCounter.builder(
                            "kvstore.tier.out.of.space",
                            engine,
                            e -> stats(e, tier).outOfSpaceErrors())
                    .tag("tier", tier.name())
                    .description("Writes the tier's storage refused for want of space (ENOSPC, EFBIG, EDQUOT)")
                    .register(registry);
            gauge(registry, "kvstore.tier.used.bytes", "Bytes of slots in use", tier, TierStats::usedBytes);
            gauge(registry, "kvstore.tier.blocks", "Blocks held", tier, TierStats::blocks);
        }
        FunctionCounter.builder("kvstore.device.storage.fallbacks", engine, TierEngine::deviceStorageFallbacks)
                .description("Moves between HBM and NVMe that went through host memory because the device storage"
                        + " copier (cuFile, NIXL GDS) failed")
                .register(registry);
        Gauge.builder("kvstore.leases.active", engine, TierEngine::activeLeases)
                .description("Leases not yet released or expired")
                .register(registry);
        registerEventCountersAtZero(registry);
    }

    /**
     * The event counters a dashboard graphs exist from start-up at zero, per tier and per pair of adjacent
     * tiers, so "no checksum failures" reads as 0 rather than as a missing series. Counters that appear
     * later (another policy after a switch, a new transfer route) are created on their first event.
     */
    private void registerEventCountersAtZero(MeterRegistry registry) {
        TierId above = null;
        for (TierId tier : engine.tierIds()) {
            Counter.builder("kvstore.lookup.hit.blocks")
                    .tag("tier", tier.name())
                    .description("Blocks of matched prefixes, by the tier that held each")
                    .register(registry);
            Counter.builder("kvstore.checksum.failures")
                    .tag("tier", tier.name())
                    .description("Block copies that failed their CRC32C and were dropped")
                    .register(registry);
            Counter.builder("kvstore.evictions")
                    .tags(
                            "tier",
                            tier.name(),
                            "policy",
                            engine.settings(tier).policy().name())
                    .description("Blocks moved out of or dropped from a tier by its policy")
                    .register(registry);
            if (above != null) {
                Counter.builder("kvstore.demotions")
                        .tags("from", above.name(), "to", tier.name())
                        .description("Blocks moved down a tier")
                        .register(registry);
                Counter.builder("kvstore.promotions")
                        .tags("from", tier.name(), "to", above.name())
                        .description("Blocks copied up a tier on a hit")
                        .register(registry);
            }
            above = tier;
        }
    }

    private void gauge(
            MeterRegistry registry, String name, String description, TierId tier, ToDoubleFunction<TierStats> value) {
        Gauge.builder(name, engine, e -> value.applyAsDouble(stats(e, tier)))
                .tag("tier", tier.name())
                .description(description)
                .register(registry);
    }

    private static TierStats stats(TierEngine engine, TierId tier) {
        for (TierStats s : engine.stats()) {
            if (s.tier() == tier) {
                return s;
            }
        }
        throw new IllegalStateException("tier " + tier + " vanished from the engine");
    }
}
