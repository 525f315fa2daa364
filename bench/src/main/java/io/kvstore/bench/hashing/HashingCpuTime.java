package io.kvstore.bench.hashing;

import io.kvstore.hashing.BlockHasher;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.hashing.HashScheme;
import io.kvstore.hashing.VllmHasher;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Random;

/**
 * Tokens per second of <em>CPU time</em> of every vLLM scheme, as {@code docs/hashing/bench_cpython.py}
 * measures CPython: the same prompts (32k random token ids below 152064, seed 1, 8 of them), block size
 * 16, extra keys none or a LoRA name and a cache salt, best of 20 rounds after a warm-up (as the Python
 * script). SHA-256 goes through libcrypto when the JVM allows native access, as the service does. JMH's figures
 * are wall-clock, and on a machine shared with other work a single thread's wall-clock rate is mostly
 * its share of the cores, which differs between two processes run one after the other; the CPU time a
 * thread spends per token hardly depends on that share, so these ratios to CPython hold under load.
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp bench/target/benchmarks.jar io.kvstore.bench.hashing.HashingCpuTime</pre>
 */
public final class HashingCpuTime {

    private static final int TOKENS = 32 * 1024;
    private static final int BLOCK = 16;
    private static final int PROMPTS = 8;
    private static final int ROUNDS = 20;

    private HashingCpuTime() {}

    public static void main(String[] args) {
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        Random random = new Random(1);
        int[][] prompts = new int[PROMPTS][];
        for (int p = 0; p < PROMPTS; p++) {
            prompts[p] = random.ints(TOKENS, 0, 152_064).toArray();
        }
        System.out.println("SHA-256: " + VllmHasher.sha256Implementation());
        long sink = 0;
        for (HashScheme scheme :
                new HashScheme[] {HashScheme.SHA256, HashScheme.SHA256_CBOR, HashScheme.XXHASH, HashScheme.XXHASH_CBOR
                }) {
            BlockHasher hasher = BlockHasher.create(scheme, "0");
            for (ExtraKeys extra : new ExtraKeys[] {ExtraKeys.NONE, ExtraKeys.of("sql-lora", "tenant-a")}) {
                long warmUntil = System.nanoTime() + 3_000_000_000L;
                while (System.nanoTime() < warmUntil) {
                    for (int[] prompt : prompts) {
                        sink += hasher.hashPrompt(prompt, BLOCK, extra).size();
                    }
                }
                double best = 0;
                for (int round = 0; round < ROUNDS; round++) {
                    long start = cpu.getCurrentThreadCpuTime();
                    for (int[] prompt : prompts) {
                        sink += hasher.hashPrompt(prompt, BLOCK, extra).size();
                    }
                    long nanos = cpu.getCurrentThreadCpuTime() - start;
                    best = Math.max(best, (double) PROMPTS * TOKENS / nanos * 1e9);
                }
                System.out.printf(
                        "%-17s %-12s %8.2f M tokens per CPU second%n",
                        scheme.wireName(), extra == ExtraKeys.NONE ? "none" : "LoRA + salt", best / 1e6);
            }
        }
        if (sink == 42) {
            System.out.println(); // keeps the hashing from being optimised away
        }
    }
}
