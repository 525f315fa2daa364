package io.kvstore.service.health;

import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierStats;
import io.kvstore.service.transport.BackendProbe;
import io.kvstore.service.transport.TransportService;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.stereotype.Component;

/**
 * {@code /actuator/health} component {@code kvstore}: each tier (provider, capacity, usable capacity, use,
 * blocks, emulated memory labelled as such), the resolved data-plane backends and the library the one-sided
 * path runs on (NIXL or direct UCX), and the HBM tier's path to NVMe (GPUDirect Storage or through host
 * memory, {@code deviceStorage}). {@code UP} while every tier works as configured; {@link #DEGRADED}
 * with the reasons while a tier is not (its filesystem ran out of space and shrank it, or demotion out of it
 * fails so its blocks stay where they are): the service still answers, with less room. The endpoint
 * answers 200 for both; {@code management.endpoint.health.status.order} ranks DEGRADED between DOWN and UP.
 */
@Component("kvstore")
public class TierHealthIndicator implements HealthIndicator {

    /** A tier works with less room than configured, or cannot move blocks down. */
    public static final Status DEGRADED = new Status("DEGRADED");

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
        List<String> degraded = new ArrayList<>();
        for (TierStats s : engine.stats()) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("provider", s.emulated() ? s.provider() + " (emulated, not a GPU)" : s.provider());
            t.put("capacityBytes", s.capacityBytes());
            t.put("usableBytes", s.usableBytes());
            t.put("usedBytes", s.usedBytes());
            t.put("blocks", s.blocks());
            t.put("policy", s.settings().policy().name());
            if (s.degraded() != null) {
                t.put("degraded", s.degraded());
                degraded.add(s.tier().name() + ": " + s.degraded());
            }
            tiers.put(s.tier().name(), t);
        }
        var resolved = backends.resolved();
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("enabled", resolved.enabled());
        b.put("unavailable", resolved.unavailable());
        b.put("summary", resolved.summary());
        Health.Builder health = degraded.isEmpty() ? Health.up() : Health.status(DEGRADED);
        if (!degraded.isEmpty()) {
            health.withDetail("reason", String.join("; ", degraded));
        }
        return health.withDetail("tiers", tiers)
                .withDetail("backends", b)
                .withDetail("dataPlane", transport.dataPlane())
                .withDetail("deviceStorage", transport.deviceStorage())
                .build();
    }
}
