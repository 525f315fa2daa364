package io.kvstore.bench.engine;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * DRAM tier put + get where the get reads a block stored long ago, so its slot comes from DRAM rather
 * than the CPU cache, and where the put either deletes an old block first or must evict one inline from
 * a full tier; beside two plain {@link MemorySegment#copy} calls and the same copies with the two
 * CRC32C passes, over the same buffers and slot rotation. {@link DramBandwidthBenchmark} reads back the
 * block it has just written (a warm slot) and always deletes first; this one measures the cold read and
 * the eviction path that a full tier takes on every put.
 *
 * <p>Every buffer rotates over a working set far larger than the CPU cache: 512 MiB of distinct
 * sources, 128 MiB of destinations, a 1 GiB tier. The block read back was stored a quarter of the tier
 * earlier (256 MiB of traffic ago), so it comes from DRAM, not from the cache. Each benchmark runs in
 * its own fork, so only its own state is allocated.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DramColdReadBenchmark {

    static final long TIER_BYTES = 1L << 30;
    static final long SLAB_BYTES = 32L << 20;
    static final long SOURCE_BYTES = 512L << 20;
    static final long DESTINATION_BYTES = 128L << 20;
    static final String NAMESPACE = "bench";

    @Param({"262144", "2097152"})
    public int blockSize;

    private Arena arena;
    private MemorySegment[] sources;
    private MemorySegment[] destinations;
    /** Blocks the tier holds when full. */
    int tierBlocks;
    /** How many operations ago the block read back was stored. */
    int readDistance;

    long op;

    @Setup(Level.Trial)
    public void buffers() {
        arena = Arena.ofShared();
        sources = new MemorySegment[(int) (SOURCE_BYTES / blockSize)];
        SplittableRandom random = new SplittableRandom(7);
        for (int i = 0; i < sources.length; i++) {
            sources[i] = arena.allocate(blockSize, 4096);
            for (long b = 0; b < blockSize; b += 8) {
                sources[i].set(ValueLayout.JAVA_LONG_UNALIGNED, b, random.nextLong());
            }
        }
        destinations = new MemorySegment[(int) (DESTINATION_BYTES / blockSize)];
        for (int i = 0; i < destinations.length; i++) {
            destinations[i] = arena.allocate(blockSize, 4096);
        }
        tierBlocks = (int) (TIER_BYTES / blockSize);
        readDistance = tierBlocks / 4;
    }

    @TearDown(Level.Trial)
    public void freeBuffers() {
        arena.close();
    }

    MemorySegment source(long n) {
        return sources[(int) (n % sources.length)];
    }

    MemorySegment destination(long n) {
        return destinations[(int) (n % destinations.length)];
    }

    /**
     * The n-th block's key. Its hash is {@code n} scrambled (Stafford's mix13, a bijection), as real xxh3
     * or sha256 chain hashes look: {@code BlockHash.ofLong(n)} of small consecutive {@code n} differ in
     * their last bytes only, and {@code Arrays.hashCode} maps those to a few hundred values, which would
     * make the engine's maps walk long (treeified) bins and measure the keys rather than the engine.
     */
    static BlockKey key(long n) {
        long z = n;
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return new BlockKey(NAMESPACE, BlockHash.ofLong(z ^ (z >>> 31)));
    }

    /**
     * A one-tier engine (1 GiB of host memory, LRU, high watermark 1.0 so nothing moves in the
     * background and both cores stay with the benchmark). {@code live} blocks are stored up front.
     */
    static TierEngine engine(DramColdReadBenchmark b, int live) throws IOException {
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), TIER_BYTES, SLAB_BYTES);
        TierEngine engine = new TierEngine(
                List.of(dram),
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)),
                Duration.ofSeconds(30),
                EngineEvents.NONE,
                Clock.systemUTC());
        for (long n = 0; n < live; n++) {
            engine.put(key(n), null, b.source(n));
        }
        b.op = live;
        return engine;
    }

    /** The tier keeps three quarters full: each put first deletes the block stored that many puts ago. */
    @State(Scope.Benchmark)
    public static class Deleting {
        TierEngine engine;
        int live;

        @Setup(Level.Trial)
        public void start(DramColdReadBenchmark b) throws IOException {
            live = b.tierBlocks * 3 / 4;
            engine = engine(b, live);
        }

        @TearDown(Level.Trial)
        public void stop() {
            engine.close();
        }
    }

    /** The tier is full: each put evicts the least recently used block inline. */
    @State(Scope.Benchmark)
    public static class Evicting {
        TierEngine engine;

        @Setup(Level.Trial)
        public void start(DramColdReadBenchmark b) throws IOException {
            engine = engine(b, b.tierBlocks);
            if (engine.tier(TierId.DRAM).blockCount() != b.tierBlocks) {
                throw new IllegalStateException("the tier holds "
                        + engine.tier(TierId.DRAM).blockCount() + " blocks, expected it full with " + b.tierBlocks);
            }
        }

        @TearDown(Level.Trial)
        public void stop() {
            engine.close();
        }
    }

    /** put of a new block (after deleting an old one) + get of a block stored 256 MiB ago. */
    @Benchmark
    public BlockRecord enginePutGet(Deleting s) throws IOException {
        long n = op++;
        s.engine.delete(key(n - s.live));
        s.engine.put(key(n), null, source(n));
        return s.engine.get(key(n - readDistance), destination(n));
    }

    /** put of a new block into a full tier (inline LRU eviction) + get of a block stored 256 MiB ago. */
    @Benchmark
    public BlockRecord enginePutEvictGet(Evicting s) throws IOException {
        long n = op++;
        s.engine.put(key(n), null, source(n));
        return s.engine.get(key(n - readDistance), destination(n));
    }

    /** Plain buffers standing in for the tier: same size, same slot rotation, no engine. */
    @State(Scope.Benchmark)
    public static class PlainRegion {
        MemorySegment region;

        @Setup(Level.Trial)
        public void allocate(DramColdReadBenchmark b) {
            region = b.arena.allocate(TIER_BYTES, 4096);
            b.op = b.tierBlocks;
        }

        long slot(DramColdReadBenchmark b, long n) {
            return (n % b.tierBlocks) * b.blockSize;
        }
    }

    /** Reference: the two copies a put+get must make, source to slot and an older slot to destination. */
    @Benchmark
    public MemorySegment memcpyReference(PlainRegion r) {
        long n = op++;
        MemorySegment.copy(source(n), 0, r.region, r.slot(this, n), blockSize);
        MemorySegment dst = destination(n);
        MemorySegment.copy(r.region, r.slot(this, n - readDistance), dst, 0, blockSize);
        return dst;
    }

    /** The floor for a checksummed put+get: the reference's two copies plus the two CRC32C passes. */
    @Benchmark
    public int memcpyAndCrcReference(PlainRegion r) {
        long n = op++;
        MemorySegment src = source(n);
        int crc = Checksums.crc32c(src);
        MemorySegment.copy(src, 0, r.region, r.slot(this, n), blockSize);
        MemorySegment slot = r.region.asSlice(r.slot(this, n - readDistance), blockSize);
        crc ^= Checksums.crc32c(slot);
        MemorySegment.copy(slot, 0, destination(n), 0, blockSize);
        return crc;
    }
}
