package io.kvstore.bench.engine;

import io.kvstore.catalog.BlockHash;
import io.kvstore.catalog.BlockKey;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierId;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * DRAM tier put + get of one block per operation (delete the key, put it again from its source buffer,
 * get it into a destination buffer), rotating over a 1 GiB tier and 512 MiB of sources and destinations,
 * far beyond any CPU cache. The reference does the same two copies with {@code MemorySegment.copy}
 * over the same working set; {@code crc32cOnly} is the checksum the tier adds to each copy.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DramBandwidthBenchmark {

    private static final long TIER = 1L << 30;
    private static final long BUFFERS = 256L << 20;

    @Param({"262144", "2097152"})
    public int blockSize;

    private Arena arena;
    private TierEngine engine;
    private MemorySegment sources;
    private MemorySegment destinations;
    private MemorySegment referenceRegion;
    private BlockKey[] keys;
    private int buffers;
    private int slots;
    private int next;

    @Setup
    public void setUp() throws Exception {
        arena = Arena.ofShared();
        sources = arena.allocate(BUFFERS, 4096);
        destinations = arena.allocate(BUFFERS, 4096);
        referenceRegion = arena.allocate(TIER, 4096);
        for (long i = 0; i < BUFFERS; i += 8) {
            sources.set(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
        }
        buffers = (int) (BUFFERS / blockSize);
        slots = (int) (TIER / blockSize) * 7 / 8;
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), TIER, 32L << 20);
        engine = new TierEngine(List.of(dram), Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)),
                Duration.ofMinutes(2), EngineEvents.NONE, Clock.systemUTC());
        keys = new BlockKey[slots];
        for (int i = 0; i < slots; i++) {
            keys[i] = new BlockKey("bench", BlockHash.ofLong(i));
            engine.put(keys[i], null, source(i));
        }
    }

    private MemorySegment source(int i) {
        return sources.asSlice((long) (i % buffers) * blockSize, blockSize);
    }

    private MemorySegment destination(int i) {
        return destinations.asSlice((long) (i % buffers) * blockSize, blockSize);
    }

    @TearDown
    public void tearDown() {
        engine.close();
        arena.close();
    }

    @Benchmark
    public Object tierPutAndGet() throws Exception {
        int i = next++ % slots;
        engine.delete(keys[i]);
        engine.put(keys[i], null, source(i));
        return engine.get(keys[i], destination(i));
    }

    @Benchmark
    public MemorySegment referenceTwoCopies() {
        int i = next++ % slots;
        MemorySegment slot = referenceRegion.asSlice((long) i * blockSize, blockSize);
        MemorySegment.copy(source(i), 0, slot, 0, blockSize);
        MemorySegment.copy(slot, 0, destination(i), 0, blockSize);
        return slot;
    }

    @Benchmark
    public int crc32cOnly() {
        int i = next++ % slots;
        return Checksums.crc32c(referenceRegion.asSlice((long) i * blockSize, blockSize));
    }
}
