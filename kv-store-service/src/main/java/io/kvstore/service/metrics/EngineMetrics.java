package io.kvstore.service.metrics;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.eviction.EvictionPolicyKind;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The service's meters, with the names operators and dashboards rely on ({@code kvstore_*} in Prometheus),
 * fed by the tier engine's events and by the API. Meters are looked up per event from Micrometer's
 * registry, which caches them by name and tags; every call is a counter increment, never a block.
 */
public final class EngineMetrics implements EngineEvents {

    /** Backend tag for bytes copied by the CPU between memory tiers or to and from files. */
    public static final String LOCAL = "local";
    /** Backend tag for bytes carried in HTTP bodies. */
    public static final String HTTP = "http";

    private final MeterRegistry registry;
    private final Counter lookupRequests;
    private final Counter lookupBlocks;
    private final Timer lookupTimer;
    private static final TierId[] TIERS = TierId.values();
    /** Hit counters by tier ordinal, created on a tier's first hit (so only tiers that exist show up). */
    private final Counter[] lookupHits = new Counter[TIERS.length];
    /** One transfer counter and timer per route, found without a registry lookup per block moved. */
    private final java.util.concurrent.ConcurrentHashMap<Route, TransferMeters> transferMeters =
            new java.util.concurrent.ConcurrentHashMap<>();

    private final Counter missingFrames;
    private final Counter clientDisconnects;
    private final Counter reservationsExpired;

    public EngineMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.missingFrames = Counter.builder("kvstore.fetch.missing.blocks")
                .description("Blocks a fetch answered as missing frames (failed verification or lost mid-answer)")
                .register(registry);
        this.clientDisconnects = Counter.builder("kvstore.client.disconnects")
                .description("Requests whose client closed the connection mid-upload or mid-fetch")
                .register(registry);
        this.reservationsExpired = Counter.builder("kvstore.reservations.expired")
                .description("Reservations that passed their expiry uncommitted (slots freed, or fenced while"
                        + " their writer's client is connected)")
                .register(registry);
        this.lookupRequests = Counter.builder("kvstore.lookup.requests")
                .description("Lookups answered")
                .register(registry);
        this.lookupBlocks = Counter.builder("kvstore.lookup.blocks")
                .description("Blocks asked for by lookups")
                .register(registry);
        this.lookupTimer = Timer.builder("kvstore.lookup")
                .description("Time to answer a lookup")
                .publishPercentileHistogram()
                .register(registry);
    }

    /** Probe round-trip timers by peer node name, registered on the first probe of each. */
    private final java.util.concurrent.ConcurrentHashMap<String, Timer> peerProbes =
            new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * One probe a cluster lookup sent to another node, from sending it to holding its answer ({@code
     * kvstore_cluster_probe_seconds{node}}): beside {@code kvstore_lookup_seconds} on the node asked and the
     * peer's own {@code http_server_requests_seconds} for {@code blocks:probe}, it splits a cluster lookup's
     * time into the node's own work, the wire and the owners' work.
     */
    public void peerProbe(String node, long nanos) {
        peerProbes
                .computeIfAbsent(
                        node,
                        n -> Timer.builder("kvstore.cluster.probe")
                                .description("Round trip of a cluster lookup's probe to another node")
                                .tag("node", n)
                                .publishPercentileHistogram()
                                .register(registry))
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    /** One lookup of {@code requested} blocks whose matched prefix lies in {@code hitTiers}, taking {@code nanos}. */
    public void lookup(int requested, List<TierId> hitTiers, long nanos) {
        lookupRequests.increment();
        lookupBlocks.increment(requested);
        // counted per tier first: a 2,048-block hit is one increment per tier, not 2,048 meter lookups
        int[] hits = new int[TIERS.length];
        for (TierId tier : hitTiers) {
            hits[tier.ordinal()]++;
        }
        for (int t = 0; t < hits.length; t++) {
            if (hits[t] > 0) {
                Counter c = lookupHits[t];
                if (c == null) { // the registry hands every caller the same counter, so a race is harmless
                    c = registry.counter("kvstore.lookup.hit.blocks", "tier", TIERS[t].name());
                    lookupHits[t] = c;
                }
                c.increment(hits[t]);
            }
        }
        lookupTimer.record(nanos, TimeUnit.NANOSECONDS);
    }

    /** Bytes moved from {@code src} to {@code dst} over {@code backend}, taking {@code nanos}. */
    public void transfer(String src, String dst, String backend, long bytes, long nanos) {
        TransferMeters m = transferMeters.computeIfAbsent(
                new Route(src, dst, backend),
                r -> new TransferMeters(
                        registry.counter(
                                "kvstore.transfer.bytes", "src", r.src(), "dst", r.dst(), "backend", r.backend()),
                        Timer.builder("kvstore.transfer")
                                .tags("src", r.src(), "dst", r.dst(), "backend", r.backend())
                                .description("Time spent moving blocks")
                                .register(registry)));
        m.bytes().increment(bytes);
        m.time().record(nanos, TimeUnit.NANOSECONDS);
    }

    private record Route(String src, String dst, String backend) {}

    private record TransferMeters(Counter bytes, Timer time) {}

    @Override
    public void reservationsExpired(int count) {
        reservationsExpired.increment(count);
    }

    @Override
    public void evicted(TierId tier, EvictionPolicyKind policy, int bytes) {
        registry.counter("kvstore.evictions", "tier", tier.name(), "policy", policy.name())
                .increment();
    }

    @Override
    public void demoted(TierId from, TierId to, int bytes) {
        registry.counter("kvstore.demotions", "from", from.name(), "to", to.name())
                .increment();
    }

    @Override
    public void promoted(TierId from, TierId to, int bytes) {
        registry.counter("kvstore.promotions", "from", from.name(), "to", to.name())
                .increment();
    }

    @Override
    public void checksumFailed(TierId tier, BlockKey key) {
        registry.counter("kvstore.checksum.failures", "tier", tier.name()).increment();
    }

    @Override
    public void readFailed(TierId tier, BlockKey key) {
        registry.counter("kvstore.read.failures", "tier", tier.name()).increment();
    }

    @Override
    public void moved(TierId from, TierId to, long bytes, long nanos) {
        transfer(from.name(), to.name(), LOCAL, bytes, nanos);
    }

    /** A fetch sent a block as a missing frame. */
    public void missingFrame() {
        missingFrames.increment();
    }

    /** A client closed its connection while its body was read or its answer written. */
    public void clientGone() {
        clientDisconnects.increment();
    }
}
