package io.kvstore.bench.hashing;

import io.kvstore.ffm.openssl.Sha256;
import io.kvstore.hashing.BlockHasher;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.hashing.HashScheme;
import io.kvstore.hashing.VllmHasher;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
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
 * <pre>java --enable-native-access=ALL-UNNAMED -cp bench/target/benchmarks.jar io.kvstore.bench.hashing.HashingCpuTime [scheme...] [floor]</pre>
 *
 * <p>With no arguments every vLLM scheme and the SHA-256 floor run in this JVM; {@code bench/hashing.sh}
 * gives each its own JVM (a scheme measured after another inherits the JIT profile of the code they
 * share, which moved a figure by up to 2x) pinned to the CPU that CPython runs on.
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
        for (HashScheme scheme : schemes(args)) {
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
        if (args.length == 0 || List.of(args).contains("floor")) {
            sink += digestAlone(cpu);
        }
        if (sink == 42) {
            System.out.println(); // keeps the hashing from being optimised away
        }
    }

    /**
     * The schemes named in the arguments (wire names, e.g. {@code vllm:xxhash}), all four vLLM schemes when
     * there are none; {@code floor} asks for the SHA-256 floor alone. One scheme per JVM keeps a scheme's
     * figure free of the JIT profile the others leave in the code they share (bench/hashing.sh does so).
     */
    private static List<HashScheme> schemes(String[] args) {
        List<HashScheme> vllm =
                List.of(HashScheme.SHA256, HashScheme.SHA256_CBOR, HashScheme.XXHASH, HashScheme.XXHASH_CBOR);
        if (args.length == 0) {
            return vllm;
        }
        return vllm.stream().filter(s -> List.of(args).contains(s.wireName())).toList();
    }

    /**
     * The floor under {@code vllm:sha256}: SHA-256 alone (libcrypto, one call per message, as the scheme
     * makes it) of as many 133-byte messages as the prompts have blocks: 133 bytes is a 16-token block's
     * pickle without extra keys when every id is at least 65536 (as most of these prompts' are), and takes
     * three 64-byte compressions once padded. Printed as ns per block and as the tokens/s it would allow.
     */
    private static long digestAlone(ThreadMXBean cpu) {
        if (!Sha256.availability().available()) {
            System.out.println("SHA-256 alone: libcrypto " + Sha256.availability());
            return 0;
        }
        int blocks = PROMPTS * TOKENS / BLOCK;
        int length = 133;
        byte[][] messages = new byte[blocks][length + 72];
        Random random = new Random(2);
        for (byte[] m : messages) {
            random.nextBytes(m);
        }
        Sha256 sha = Sha256.create();
        byte[] out = new byte[Sha256.DIGEST_BYTES];
        long sink = 0;
        long warmUntil = System.nanoTime() + 2_000_000_000L;
        while (System.nanoTime() < warmUntil) {
            for (byte[] m : messages) {
                sha.digestPaddingInPlace(m, 0, length, out, 0);
                sink += out[0];
            }
        }
        double bestNanos = Double.MAX_VALUE;
        for (int round = 0; round < ROUNDS; round++) {
            long start = cpu.getCurrentThreadCpuTime();
            for (byte[] m : messages) {
                sha.digestPaddingInPlace(m, 0, length, out, 0);
                sink += out[0];
            }
            bestNanos = Math.min(bestNanos, (double) (cpu.getCurrentThreadCpuTime() - start) / blocks);
        }
        System.out.printf(
                "SHA-256 alone of a %d-byte block message: %.0f ns per block = %.2f M tokens per CPU second%n",
                length, bestNanos, BLOCK / bestNanos * 1e3);
        return sink;
    }
}
