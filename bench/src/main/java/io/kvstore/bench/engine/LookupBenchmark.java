package io.kvstore.bench.engine;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.catalog.Catalog;
import io.kvstore.catalog.LookupResult;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Lookup of a 2,048-block chain among 1,024,000 resident blocks (500 chains of 32-byte hashes), a random
 * chain per call so every lookup walks cold memory, beside the JDK reference: 2,048
 * {@code ConcurrentHashMap.get} calls on a map of the same 1,024,000 keys.
 *
 * <p>Two fills, because they answer different questions. {@link CatalogFilled} puts entries straight into
 * a {@link Catalog} (no block memory): the catalog's own cost. {@link EngineFilled} stores every block
 * for real through {@link TierEngine#put} into a DRAM tier of 4 KiB blocks (the smallest slot, 4 GB in
 * all): what a lookup through the engine costs, eviction-policy bookkeeping included.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class LookupBenchmark {

    static final int CHAINS = 500;
    static final int CHAIN = 2048;
    static final String NAMESPACE = "llama-3-8b";
    private static final int BLOCK = 4096;

    /** 500 chains of 2,048 random 32-byte (sha256-sized) hashes, the same for every fill. */
    static List<List<BlockHash>> chains() {
        SplittableRandom r = new SplittableRandom(3);
        List<List<BlockHash>> chains = new ArrayList<>(CHAINS);
        for (int c = 0; c < CHAINS; c++) {
            List<BlockHash> hashes = new ArrayList<>(CHAIN);
            for (int b = 0; b < CHAIN; b++) {
                byte[] h = new byte[32];
                for (int i = 0; i < 32; i += 8) {
                    long v = r.nextLong();
                    for (int j = 0; j < 8; j++) {
                        h[i + j] = (byte) (v >>> (8 * j));
                    }
                }
                hashes.add(BlockHash.of(h));
            }
            chains.add(List.copyOf(hashes));
        }
        return chains;
    }

    /** The catalog filled directly, entries resident in DRAM, and the reference map of the same keys. */
    @State(Scope.Benchmark)
    public static class CatalogFilled {
        Catalog catalog;
        ConcurrentHashMap<BlockKey, Boolean> reference;
        List<List<BlockHash>> chains;

        @Setup
        public void fill() {
            chains = chains();
            catalog = new Catalog(System::currentTimeMillis);
            reference = new ConcurrentHashMap<>();
            for (List<BlockHash> chain : chains) {
                BlockHash parent = null;
                for (BlockHash hash : chain) {
                    BlockKey key = new BlockKey(NAMESPACE, hash);
                    catalog.entryFor(key, parent, BLOCK, 0).addTier(TierId.DRAM);
                    reference.put(key, Boolean.TRUE);
                    parent = hash;
                }
            }
        }
    }

    /** A tier engine holding all 1,024,000 blocks in a DRAM tier of exactly that size (LRU policy). */
    @State(Scope.Benchmark)
    public static class EngineFilled {
        TierEngine engine;
        List<List<BlockHash>> chains;
        private Arena arena;

        @Setup
        public void fill() throws IOException {
            chains = chains();
            arena = Arena.ofShared();
            MemorySegment block = arena.allocate(BLOCK, 4096);
            for (long i = 0; i < BLOCK; i += 8) {
                block.set(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
            }
            long capacity = (long) CHAINS * CHAIN * BLOCK;
            MemoryTier dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), capacity, 32L << 20);
            engine = new TierEngine(
                    List.of(dram),
                    Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.9, false)),
                    Duration.ofMinutes(2),
                    EngineEvents.NONE,
                    Clock.systemUTC());
            for (List<BlockHash> chain : chains) {
                BlockHash parent = null;
                for (BlockHash hash : chain) {
                    engine.put(new BlockKey(NAMESPACE, hash), parent, block);
                    parent = hash;
                }
            }
            if (engine.blockCount() != CHAINS * CHAIN) {
                throw new IllegalStateException(
                        "engine holds " + engine.blockCount() + " blocks, expected " + CHAINS * CHAIN);
            }
        }

        @TearDown
        public void close() {
            engine.close();
            arena.close();
        }
    }

    /** Picks the chain of each call; the pick costs nanoseconds against a millisecond lookup. */
    @State(Scope.Thread)
    public static class Pick {
        private final SplittableRandom random = new SplittableRandom(11);

        List<BlockHash> chain(List<List<BlockHash>> chains) {
            return chains.get(random.nextInt(chains.size()));
        }
    }

    @Benchmark
    public LookupResult catalogLookup2048(CatalogFilled s, Pick pick) {
        return check(s.catalog.lookup(NAMESPACE, pick.chain(s.chains)));
    }

    @Benchmark
    public LookupResult engineLookup2048(EngineFilled s, Pick pick) {
        return check(s.engine.lookup(NAMESPACE, pick.chain(s.chains)));
    }

    /**
     * Decomposition, not a figure of merit: the catalog's map gets plus the read of each entry's tier bits
     * ({@link Catalog#get} + {@code fastestTier()}), without the access stamp and result lists a lookup adds.
     */
    @Benchmark
    public int catalogGetsOnly2048(CatalogFilled s, Pick pick) {
        int found = 0;
        for (BlockHash hash : pick.chain(s.chains)) {
            var entry = s.catalog.get(new BlockKey(NAMESPACE, hash));
            if (entry == null || entry.fastestTier() == null) {
                break;
            }
            found++;
        }
        if (found != CHAIN) {
            throw new IllegalStateException("catalog gets found " + found + " of " + CHAIN + " blocks");
        }
        return found;
    }

    /** Decomposition: {@link #catalogGetsOnly2048} plus the access stamp a lookup writes into each entry. */
    @Benchmark
    public int catalogGetsAndTouch2048(CatalogFilled s, Pick pick) {
        int found = 0;
        for (BlockHash hash : pick.chain(s.chains)) {
            var entry = s.catalog.get(new BlockKey(NAMESPACE, hash));
            if (entry == null || entry.fastestTier() == null) {
                break;
            }
            s.catalog.touch(entry);
            found++;
        }
        if (found != CHAIN) {
            throw new IllegalStateException("catalog gets found " + found + " of " + CHAIN + " blocks");
        }
        return found;
    }

    @Benchmark
    public int referenceMapGets2048(CatalogFilled s, Pick pick) {
        int found = 0;
        for (BlockHash hash : pick.chain(s.chains)) {
            if (s.reference.get(new BlockKey(NAMESPACE, hash)) == null) {
                break;
            }
            found++;
        }
        if (found != CHAIN) {
            throw new IllegalStateException("reference map found " + found + " of " + CHAIN + " blocks");
        }
        return found;
    }

    private static LookupResult check(LookupResult result) {
        if (result.matchedBlocks() != CHAIN) {
            throw new IllegalStateException("lookup matched " + result.matchedBlocks() + " of " + CHAIN + " blocks");
        }
        return result;
    }
}
