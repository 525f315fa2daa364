package io.kvstore.service.health;

import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierStats;
import io.kvstore.service.transport.BackendProbe;
import io.kvstore.service.transport.TransportService;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.stereotype.Component;

/**
 * {@code /actuator/health} component {@code kvstore}: each tier (provider, capacity, use, blocks,
 * emulated memory labelled as such), the resolved data-plane backends and the library the one-sided
 * path runs on (NIXL or direct UCX). Up while the engine answers.
 */
@Component("kvstore")
public class TierHealthIndicator implements HealthIndicator {

    private final TierEngine engine;
    private final BackendProbe backends;
    private final TransportService transport;

    public TierHealthIndicator(TierEngine engine, BackendProbe backends, TransportService transport) {
        this.engine = engine;
        this.backends = backends;
        this.transport = transport;
    }

    @Override
    public Health health() {
        Map<String, Object> tiers = new LinkedHashMap<>();
        for (TierStats s : engine.stats()) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("provider", s.emulated() ? s.provider() + " (emulated, not a GPU)" : s.provider());
            t.put("capacityBytes", s.capacityBytes());
            t.put("usedBytes", s.usedBytes());
            t.put("blocks", s.blocks());
            t.put("policy", s.settings().policy().name());
            tiers.put(s.tier().name(), t);
        }
        var resolved = backends.resolved();
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("enabled", resolved.enabled());
        b.put("unavailable", resolved.unavailable());
        b.put("summary", resolved.summary());
        return Health.up()
                .withDetail("tiers", tiers)
                .withDetail("backends", b)
                .withDetail("dataPlane", transport.dataPlane())
                .build();
    }
}
