package io.kvstore.bench.engine;

import io.kvstore.catalog.BlockHash;
import io.kvstore.catalog.BlockKey;
import io.kvstore.catalog.Catalog;
import io.kvstore.catalog.LookupResult;
import io.kvstore.tier.TierId;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Lookup of a 2,048-block chain in a catalog of 1,024,000 blocks (500 chains), a random chain each
 * time, beside the JDK reference: 2,048 {@code ConcurrentHashMap.get} calls on a map of the same keys.
 * The catalog is filled directly (entries marked resident in DRAM) because 1M real blocks would need
 * gigabytes of block memory that a lookup never touches.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class LookupBenchmark {

    private static final int CHAINS = 500;
    private static final int CHAIN = 2048;

    private Catalog catalog;
    private ConcurrentHashMap<BlockKey, Boolean> reference;
    private List<List<BlockHash>> chains;
    private List<List<BlockKey>> chainKeys;
    private final SplittableRandom random = new SplittableRandom(11);
    private int next;

    @Setup
    public void setUp() {
        catalog = new Catalog(System::currentTimeMillis);
        reference = new ConcurrentHashMap<>(CHAINS * CHAIN * 2);
        chains = new ArrayList<>();
        chainKeys = new ArrayList<>();
        SplittableRandom r = new SplittableRandom(3);
        for (int c = 0; c < CHAINS; c++) {
            List<BlockHash> hashes = new ArrayList<>(CHAIN);
            List<BlockKey> keys = new ArrayList<>(CHAIN);
            BlockHash parent = null;
            for (int b = 0; b < CHAIN; b++) {
                byte[] h = new byte[32];
                for (int i = 0; i < 32; i += 8) {
                    long v = r.nextLong();
                    for (int j = 0; j < 8; j++) {
                        h[i + j] = (byte) (v >>> (8 * j));
                    }
                }
                BlockHash hash = BlockHash.of(h);
                BlockKey key = new BlockKey("llama-3-8b", hash);
                catalog.entryFor(key, parent, 2 << 20, 0).addTier(TierId.DRAM);
                reference.put(key, Boolean.TRUE);
                hashes.add(hash);
                keys.add(key);
                parent = hash;
            }
            chains.add(hashes);
            chainKeys.add(keys);
        }
    }

    @Setup(Level.Invocation)
    public void pickChain() {
        next = random.nextInt(CHAINS);
    }

    @Benchmark
    public LookupResult catalogLookup2048() {
        return catalog.lookup("llama-3-8b", chains.get(next));
    }

    @Benchmark
    public int referenceMapGets2048() {
        int found = 0;
        List<BlockHash> hashes = chains.get(next);
        for (BlockHash hash : hashes) {
            if (reference.get(new BlockKey("llama-3-8b", hash)) != null) {
                found++;
            }
        }
        return found;
    }
}
