package io.kvstore.service.metrics;

import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierStats;
import io.kvstore.tier.TierId;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.ToDoubleFunction;

/** Gauges read from the engine when scraped: per-tier capacity, use and block count, and active leases. */
public final class TierGauges implements MeterBinder {

    private final TierEngine engine;

    public TierGauges(TierEngine engine) {
        this.engine = engine;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (TierId tier : engine.tierIds()) {
            gauge(registry, "kvstore.tier.capacity.bytes", "Bytes the tier can hold", tier, TierStats::capacityBytes);
            gauge(registry, "kvstore.tier.used.bytes", "Bytes of slots in use", tier, TierStats::usedBytes);
            gauge(registry, "kvstore.tier.blocks", "Blocks held", tier, TierStats::blocks);
        }
        Gauge.builder("kvstore.leases.active", engine, TierEngine::activeLeases)
                .description("Leases not yet released or expired").register(registry);
    }

    private void gauge(MeterRegistry registry, String name, String description, TierId tier,
            ToDoubleFunction<TierStats> value) {
        Gauge.builder(name, engine, e -> value.applyAsDouble(stats(e, tier))).tag("tier", tier.name())
                .description(description).register(registry);
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
