package io.kvstore.service.events;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Not a test: {@code bench/events.sh} runs it. Stores/s of 4 KiB blocks into a DRAM tier by {@code threads}
 * threads, with KV events off and on (a publisher on loopback and a subscriber reading every batch), in
 * alternating rounds of one run (off first, then on first, and so on), so both see the same machine state.
 */
public final class EventsStoreRate {

    private static final int BLOCK = 4096;

    public static void main(String[] args) throws Exception {
        int blocks = args.length > 0 ? Integer.parseInt(args[0]) : 32_768;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        EventsProperties config = EventedEngine.config(100_000, Duration.ofMillis(5), EventEncoding.ARRAY, 100_000);
        try (Arena arena = Arena.ofShared();
                KvEventPublisher publisher =
                        new KvEventPublisher(config, "bench", ns -> null, new SimpleMeterRegistry());
                ZContext context = new ZContext(1);
                TierEngine off = engine(blocks, EngineEvents.NONE);
                TierEngine on = engine(blocks, publisher)) {
            // a router elsewhere would decode; here a subscriber only counts the messages it receives
            ZMQ.Socket sub = context.createSocket(SocketType.SUB);
            sub.subscribe(new byte[0]);
            sub.setHandshakeIvl(EventSockets.CONNECT_HANDSHAKE_MILLIS);
            sub.connect(publisher.endpoint());
            AtomicLong received = new AtomicLong();
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    while (true) {
                        sub.recv();
                        if (!sub.hasReceiveMore()) {
                            received.incrementAndGet();
                        }
                    }
                } catch (org.zeromq.ZMQException closed) {
                    // the context closed at the end of the run
                }
            });
            Thread.sleep(500);
            MemorySegment src = arena.allocate(BLOCK);
            src.fill((byte) 7);
            List<Double> offRates = new ArrayList<>();
            List<Double> onRates = new ArrayList<>();
            for (int r = 0; r < rounds + 1; r++) { // round 0 warms up both
                boolean offFirst = r % 2 == 0; // off, on, on, off, ...: neither always runs first
                double a = offFirst ? round(off, blocks, threads, src) : Double.NaN;
                double b = round(on, blocks, threads, src);
                if (!offFirst) {
                    a = round(off, blocks, threads, src);
                }
                if (r > 0) {
                    offRates.add(a);
                    onRates.add(b);
                }
            }
            Thread.sleep(500);
            System.out.printf(
                    "# %d x 4 KiB stores per round, %d thread(s), %d rounds; %d CPUs%n",
                    blocks, threads, rounds, Runtime.getRuntime().availableProcessors());
            System.out.printf("events off: median %.0f stores/s, best %.0f%n", median(offRates), max(offRates));
            System.out.printf("events on:  median %.0f stores/s, best %.0f%n", median(onRates), max(onRates));
            System.out.printf(
                    "on/off: median %.3f, best %.3f; last seq %d, batches received by the subscriber %d%n",
                    median(onRates) / median(offRates),
                    max(onRates) / max(offRates),
                    publisher.lastSeq(),
                    received.get());
        }
    }

    private static TierEngine engine(int blocks, EngineEvents events) {
        Map<TierId, TierSettings> settings = new EnumMap<>(TierId.class);
        settings.put(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.99, 0.98, false));
        long capacity = (long) blocks * BLOCK * 11 / 10;
        capacity = (capacity + (1 << 20) - 1) / (1 << 20) * (1 << 20);
        return new TierEngine(
                List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), capacity, 1 << 20)),
                settings,
                Duration.ofSeconds(30),
                events,
                Clock.systemUTC());
    }

    /** Stores {@code blocks} new blocks and returns stores/s; then deletes them (not timed). */
    private static double round(TierEngine engine, int blocks, int threads, MemorySegment src) throws Exception {
        AtomicLong next = new AtomicLong();
        String ns = "bench";
        Thread[] workers = new Thread[threads];
        long start = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            workers[t] = Thread.ofPlatform().start(() -> {
                try {
                    for (long i = next.getAndIncrement(); i < blocks; i = next.getAndIncrement()) {
                        engine.put(new BlockKey(ns, BlockHash.ofLong(i * 0x9E3779B97F4A7C15L + 1)), null, src);
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
        }
        for (Thread w : workers) {
            w.join();
        }
        double rate = blocks / ((System.nanoTime() - start) / 1e9);
        engine.deleteNamespace(ns);
        return rate;
    }

    private static double median(List<Double> v) {
        double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a[a.length / 2];
    }

    private static double max(List<Double> v) {
        return Arrays.stream(v.stream().mapToDouble(Double::doubleValue).toArray())
                .max()
                .orElse(0);
    }
}
