package io.kvstore.service.events;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.memory.EmulatedDeviceMemoryProvider;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A real tier engine (emulated HBM over DRAM) whose copy events go to a real {@link KvEventPublisher} on
 * loopback ports, as the service wires them, plus a count of the changes the engine reported.
 */
final class EventedEngine implements AutoCloseable {

    static final Map<String, NamespaceTopics.Declared> DECLARED = Map.of(
            "a", new NamespaceTopics.Declared("model-a", 16),
            "lora", new NamespaceTopics.Declared("model-l", 16, "sql-lora", List.of("tenant-salt")));

    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final KvEventPublisher publisher;
    final TierEngine engine;
    final Arena arena = Arena.ofShared();
    private final AtomicLong reported = new AtomicLong();
    private final int blockBytes;

    EventedEngine(EventsProperties config, int blockBytes, int hbmBlocks, int dramBlocks) {
        this(config, blockBytes, hbmBlocks, dramBlocks, DECLARED::get);
    }

    EventedEngine(
            EventsProperties config,
            int blockBytes,
            int hbmBlocks,
            int dramBlocks,
            java.util.function.Function<String, NamespaceTopics.Declared> declarations) {
        this.blockBytes = blockBytes;
        this.publisher = new KvEventPublisher(config, "test", declarations, registry);
        EngineEvents counting = new EngineEvents() {
            @Override
            public void copyAdded(TierId tier, BlockRecord block) {
                reported.incrementAndGet();
            }

            @Override
            public void copyRemoved(TierId tier, BlockKey key, int length) {
                reported.incrementAndGet();
            }
        };
        Map<TierId, TierSettings> settings = new EnumMap<>(TierId.class);
        settings.put(TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, false));
        settings.put(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.95, 0.9, false));
        List<MemoryTier> tiers = List.of(
                new MemoryTier(
                        TierId.HBM, new EmulatedDeviceMemoryProvider(), (long) hbmBlocks * blockBytes, blockBytes),
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), (long) dramBlocks * blockBytes, blockBytes));
        this.engine = new TierEngine(
                tiers, settings, Duration.ofSeconds(30), new EngineEventsTee(counting, publisher), Clock.systemUTC());
        publisher.resyncFrom(engine::blocks, engine::info); // as EngineConfiguration wires it
    }

    static EventsProperties config(int queueSize, Duration interval, EventEncoding encoding, int hwm) {
        return new EventsProperties(
                true,
                "tcp://127.0.0.1:*",
                "tcp://127.0.0.1:*",
                "kv@{host}@{model}",
                1000,
                queueSize,
                interval,
                64,
                hwm,
                encoding,
                0,
                new EventsProperties.Medium("GPU", "CPU", "DISK"));
    }

    static BlockKey key(String namespace, long id) {
        return new BlockKey(namespace, BlockHash.ofLong(0x9E3779B97F4A7C15L * (id + 1)));
    }

    /** Stores block {@code id} of {@code namespace} with its predecessor as parent. */
    BlockKey store(String namespace, long id) throws Exception {
        BlockKey key = key(namespace, id);
        MemorySegment bytes = arena.allocate(blockBytes);
        bytes.fill((byte) id);
        engine.put(key, id == 0 ? null : key(namespace, id - 1).hash(), bytes);
        return key;
    }

    /** Waits until the publisher has sent (or dropped) every change the engine reported. */
    void awaitPublished(Duration timeout) throws InterruptedException {
        engine.awaitMoves();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (publisher.handled() + dropped() < reported.get()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("published " + publisher.handled() + " + dropped " + dropped() + " of "
                        + reported.get() + " changes within " + timeout);
            }
            Thread.sleep(5);
        }
    }

    /** Waits until a re-announcement after {@code AllBlocksCleared}, if one is under way, has been sent. */
    void awaitResynced(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (publisher.resyncPending()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("re-announcement not finished within " + timeout);
            }
            Thread.sleep(5);
        }
        awaitPublished(timeout); // changes made while the catalog was read
    }

    long reported() {
        return reported.get();
    }

    long dropped() {
        return (long) registry.get("kvstore.events.dropped").counter().count();
    }

    @Override
    public void close() {
        engine.close();
        publisher.close();
        arena.close();
    }
}
