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
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import net.openhft.hashing.LongHashFunction;
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
 * DRAM tier put + get of one block per operation, beside {@code MemorySegment.copy} doing the same two
 * copies over the same working set: a 1 GiB tier (1 GiB reference region) and 256 MiB each of distinct
 * source and destination buffers, far beyond the 8 MiB L3.
 *
 * <p>One tier operation deletes a key, puts it again from its source buffer ({@link TierEngine#put}:
 * checksum + copy in) and gets it into a destination buffer ({@link TierEngine#get}: verify + copy out).
 * The other benchmarks split that cost: the two copies alone (the reference), the same two copies with
 * the two CRC32C passes the engine makes (no engine bookkeeping), and each checksum alone over the same
 * rotating blocks: CRC32C as stored, and CRC32 and xxh3-64 as candidates that may run faster.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DramBandwidthBenchmark {

    private static final long TIER = 1L << 30;
    private static final long BUFFERS = 256L << 20;
    private static final LongHashFunction XXH3 = LongHashFunction.xx3();

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
        // 7/8 of the tier: below its high watermark, so no background demotion runs while we measure.
        slots = (int) (TIER / blockSize) * 7 / 8;
        MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), TIER, 32L << 20);
        engine = new TierEngine(
                List.of(dram),
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)),
                Duration.ofMinutes(2),
                EngineEvents.NONE,
                Clock.systemUTC());
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

    private MemorySegment referenceSlot(int i) {
        return referenceRegion.asSlice((long) i * blockSize, blockSize);
    }

    @TearDown
    public void tearDown() {
        engine.close();
        arena.close();
    }

    @Benchmark
    public BlockRecord tierPutAndGet() throws Exception {
        int i = next++ % slots;
        engine.delete(keys[i]);
        engine.put(keys[i], null, source(i));
        return engine.get(keys[i], destination(i));
    }

    @Benchmark
    public MemorySegment referenceTwoCopies() {
        int i = next++ % slots;
        MemorySegment slot = referenceSlot(i);
        MemorySegment.copy(source(i), 0, slot, 0, blockSize);
        MemorySegment.copy(slot, 0, destination(i), 0, blockSize);
        return slot;
    }

    /** The bytes the engine moves and checksums, in its order, without catalog, allocator or policy. */
    @Benchmark
    public int twoCopiesTwoCrc32c() {
        int i = next++ % slots;
        MemorySegment src = source(i);
        MemorySegment slot = referenceSlot(i);
        int crc = Checksums.crc32c(src);
        MemorySegment.copy(src, 0, slot, 0, blockSize);
        if (Checksums.crc32c(slot) != crc) {
            throw new IllegalStateException("copy differs from its source");
        }
        MemorySegment.copy(slot, 0, destination(i), 0, blockSize);
        return crc;
    }

    /** What-if: the get trusts a memory tier's copy (the put's checksum is kept for slower tiers). */
    @Benchmark
    public int twoCopiesOneCrc32c() {
        int i = next++ % slots;
        MemorySegment src = source(i);
        MemorySegment slot = referenceSlot(i);
        int crc = Checksums.crc32c(src);
        MemorySegment.copy(src, 0, slot, 0, blockSize);
        MemorySegment.copy(slot, 0, destination(i), 0, blockSize);
        return crc;
    }

    /** What-if: the engine's two checksum passes with the JDK's CRC32 (PCLMULQDQ folding) instead. */
    @Benchmark
    public long twoCopiesTwoCrc32() {
        int i = next++ % slots;
        MemorySegment src = source(i);
        MemorySegment slot = referenceSlot(i);
        long crc = crc32(src);
        MemorySegment.copy(src, 0, slot, 0, blockSize);
        if (crc32(slot) != crc) {
            throw new IllegalStateException("copy differs from its source");
        }
        MemorySegment.copy(slot, 0, destination(i), 0, blockSize);
        return crc;
    }

    /** What-if: CRC32 on the put only. */
    @Benchmark
    public long twoCopiesOneCrc32() {
        int i = next++ % slots;
        MemorySegment src = source(i);
        MemorySegment slot = referenceSlot(i);
        long crc = crc32(src);
        MemorySegment.copy(src, 0, slot, 0, blockSize);
        MemorySegment.copy(slot, 0, destination(i), 0, blockSize);
        return crc;
    }

    /**
     * What-if: checksum fused into each copy, 64 KiB at a time, over the bytes just written (still in L2),
     * CRC32C as stored: the put checksums what the slot holds, the get what the caller receives.
     */
    @Benchmark
    public int fusedTwoCopiesTwoCrc32c() {
        int i = next++ % slots;
        MemorySegment slot = referenceSlot(i);
        int crc = copyAndCrc32c(source(i), slot);
        if (copyAndCrc32c(slot, destination(i)) != crc) {
            throw new IllegalStateException("copy differs from its source");
        }
        return crc;
    }

    private static final int CHUNK = 64 << 10;

    private static int copyAndCrc32c(MemorySegment from, MemorySegment to) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        for (long at = 0; at < from.byteSize(); at += CHUNK) {
            long n = Math.min(CHUNK, from.byteSize() - at);
            MemorySegment.copy(from, at, to, at, n);
            crc.update(to.asSlice(at, n).asByteBuffer());
        }
        return (int) crc.getValue();
    }

    private static long crc32(MemorySegment bytes) {
        CRC32 crc = new CRC32();
        crc.update(bytes.asByteBuffer());
        return crc.getValue();
    }

    @Benchmark
    public int crc32cOnly() {
        return Checksums.crc32c(referenceSlot(next++ % slots));
    }

    @Benchmark
    public long crc32Only() {
        return crc32(referenceSlot(next++ % slots));
    }

    @Benchmark
    public long xxh3Only() {
        MemorySegment slot = referenceSlot(next++ % slots);
        return XXH3.hashMemory(slot.address(), slot.byteSize());
    }
}
