package io.kvstore.bench.eviction;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.eviction.EvictionPolicy;
import io.kvstore.eviction.EvictionPolicyKind;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.Predicate;

/**
 * Hit rates of the eviction policies on one generated block trace, at equal capacity: the policies of
 * {@code tier-engine} (W-TinyLFU delegated to Caffeine among them) and the home-made W-TinyLFU it
 * replaced. The trace is what a KV cache sees: prompts that share zipf-popular prefixes (system prompts,
 * documents) followed by a unique tail, interleaved with scans of one-time blocks (batch jobs) that
 * would flush a recency-only cache. Every block is one unit of capacity; a block is a hit when it is
 * resident when asked for, and a miss inserts it, evicting the policy's victim when the tier is full.
 *
 * <p>Run: {@code java -cp bench/target/benchmarks.jar io.kvstore.bench.eviction.EvictionHitRates [seed]}
 */
public final class EvictionHitRates {

    private static final int FAMILIES = 4_000;
    private static final double ZIPF_S = 0.9;
    private static final int REQUESTS = 60_000;
    private static final int SCAN_EVERY = 500;
    private static final int SCAN_BLOCKS = 4_000;

    /** The operations a policy under test needs; adapts both the engine's policies and the old one. */
    interface Subject {
        void onInsert(BlockKey key, BlockKey parent);

        void onAccess(BlockKey key);

        void onRemove(BlockKey key);

        BlockKey nextVictim(Predicate<BlockKey> evictable);
    }

    private EvictionHitRates() {}

    public static void main(String[] args) {
        long seed = args.length > 0 ? Long.parseLong(args[0]) : 42;
        List<BlockKey[]> trace = trace(seed);
        long blocks = trace.stream().mapToLong(r -> r.length).sum();
        System.out.printf(
                Locale.ROOT,
                "trace: seed %d, %d requests, %d block accesses, %d prefix families (zipf %.1f), a scan of %d"
                        + " one-time blocks every %d requests%n",
                seed,
                trace.size(),
                blocks,
                FAMILIES,
                ZIPF_S,
                SCAN_BLOCKS,
                SCAN_EVERY);
        System.out.println(
                "| capacity (blocks) | LRU | LFU | PREFIX_AWARE | W-TinyLFU home-made | W-TinyLFU Caffeine | Caffeine evicting itself |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|");
        for (int capacity : new int[] {2_000, 8_000, 32_000}) {
            StringBuilder row = new StringBuilder("| " + capacity + " |");
            for (EvictionPolicyKind kind :
                    List.of(EvictionPolicyKind.LRU, EvictionPolicyKind.LFU, EvictionPolicyKind.PREFIX_AWARE)) {
                row.append(String.format(Locale.ROOT, " %.3f |", hitRate(trace, capacity, engine(kind, capacity))));
            }
            row.append(String.format(Locale.ROOT, " %.3f |", hitRate(trace, capacity, new HomeMadeWTinyLfu())));
            row.append(String.format(
                    Locale.ROOT, " %.3f |", hitRate(trace, capacity, engine(EvictionPolicyKind.W_TINYLFU, capacity))));
            row.append(String.format(Locale.ROOT, " %.3f |", caffeineAlone(trace, capacity)));
            System.out.println(row);
        }
    }

    static double hitRate(List<BlockKey[]> trace, int capacity, Subject policy) {
        Set<BlockKey> resident = new HashSet<>();
        long hits = 0;
        long total = 0;
        for (BlockKey[] request : trace) {
            BlockKey parent = null;
            for (BlockKey key : request) {
                total++;
                if (resident.contains(key)) {
                    hits++;
                    policy.onAccess(key);
                } else {
                    if (resident.size() >= capacity) {
                        BlockKey victim = policy.nextVictim(k -> true);
                        policy.onRemove(victim);
                        resident.remove(victim);
                    }
                    policy.onInsert(key, parent);
                    resident.add(key);
                }
                parent = key;
            }
        }
        return (double) hits / total;
    }

    /** The reference: a plain Caffeine cache of {@code capacity} entries choosing its own victims. */
    static double caffeineAlone(List<BlockKey[]> trace, int capacity) {
        Cache<BlockKey, Boolean> cache = Caffeine.newBuilder()
                .executor(Runnable::run)
                .maximumSize(capacity)
                .build();
        long hits = 0;
        long total = 0;
        for (BlockKey[] request : trace) {
            for (BlockKey key : request) {
                total++;
                if (cache.getIfPresent(key) != null) {
                    hits++;
                } else {
                    cache.put(key, Boolean.TRUE);
                }
            }
        }
        return (double) hits / total;
    }

    /** Requests: a zipf-chosen family's shared prefix (8-64 blocks) then a unique tail; scans between. */
    static List<BlockKey[]> trace(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        double[] cumulative = new double[FAMILIES];
        double sum = 0;
        for (int i = 0; i < FAMILIES; i++) {
            sum += 1 / Math.pow(i + 1, ZIPF_S);
            cumulative[i] = sum;
        }
        int[] prefixLength = new int[FAMILIES];
        for (int i = 0; i < FAMILIES; i++) {
            prefixLength[i] = 8 + random.nextInt(57);
        }
        long unique = 1L << 40;
        List<BlockKey[]> trace = new ArrayList<>(REQUESTS + REQUESTS / SCAN_EVERY);
        for (int r = 0; r < REQUESTS; r++) {
            double u = random.nextDouble() * sum;
            int family = Math.min(FAMILIES - 1, lowerBound(cumulative, u));
            int tail = 2 + random.nextInt(15);
            BlockKey[] request = new BlockKey[prefixLength[family] + tail];
            for (int b = 0; b < prefixLength[family]; b++) {
                request[b] = key(((long) family << 8) | b);
            }
            for (int b = prefixLength[family]; b < request.length; b++) {
                request[b] = key(unique++);
            }
            trace.add(request);
            if (r % SCAN_EVERY == SCAN_EVERY - 1) {
                BlockKey[] scan = new BlockKey[SCAN_BLOCKS];
                for (int b = 0; b < SCAN_BLOCKS; b++) {
                    scan[b] = key(unique++);
                }
                trace.add(scan);
            }
        }
        return trace;
    }

    private static int lowerBound(double[] cumulative, double u) {
        int lo = 0;
        int hi = cumulative.length - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (cumulative[mid] < u) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    private static BlockKey key(long id) {
        return new BlockKey("trace", BlockHash.ofLong(id));
    }

    /** An engine policy seen as a {@link Subject}: the same four calls, the sealed interface kept closed. */
    private static Subject engine(EvictionPolicyKind kind, int capacity) {
        EvictionPolicy p = kind.create(capacity, key -> 1);
        return new Subject() {
            @Override
            public void onInsert(BlockKey key, BlockKey parent) {
                p.onInsert(key, parent);
            }

            @Override
            public void onAccess(BlockKey key) {
                p.onAccess(key);
            }

            @Override
            public void onRemove(BlockKey key) {
                p.onRemove(key);
            }

            @Override
            public BlockKey nextVictim(Predicate<BlockKey> evictable) {
                return p.nextVictim(evictable);
            }
        };
    }
}
