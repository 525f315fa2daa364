package io.kvstore.bench.hashing;

import io.kvstore.block.BlockHash;
import io.kvstore.hashing.BlockHasher;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.hashing.HashScheme;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import net.openhft.hashing.LongHashFunction;
import net.openhft.hashing.LongTupleHashFunction;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Tokens per second of every block-hash scheme on 32k-token prompts (block size 16), beside raw
 * SHA-256, raw XXH3-64 and raw XXH3-128 over the same prompts' token bytes (u32 little-endian, one
 * pass): the ratio is what per-block finalisation, pickle or CBOR encoding and chaining cost on top of
 * the bare hash. {@code docs/hashing/bench_cpython.py} measures CPython doing vLLM's own algorithm on
 * the same kind of prompt; {@code bench/hashing.sh} runs both.
 *
 * <p>Each invocation hashes the next of 256 distinct prompts (32 MiB of token ids, plus as much
 * again as bytes for the references), so the working set is far larger than the CPU caches.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@OperationsPerInvocation(BlockHashingBenchmark.PROMPT_TOKENS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(value = 1, jvmArgsAppend = "--sun-misc-unsafe-memory-access=allow")
public class BlockHashingBenchmark {

    static final int PROMPT_TOKENS = 32 * 1024;
    private static final int PROMPTS = 256;
    private static final int BLOCK_SIZE = 16;

    /** Whether requests carry a LoRA name and a cache salt. */
    @Param({"false", "true"})
    public boolean extraKeys;

    private int[][] tokens;
    private byte[][] tokenBytes;
    private BlockHasher vllmSha256;
    private BlockHasher vllmSha256Cbor;
    private BlockHasher vllmXxhash;
    private BlockHasher vllmXxhashCbor;
    private BlockHasher dynamoKvbmV1;
    private BlockHasher dynamoRouter;
    private MessageDigest sha256;
    private ExtraKeys extra;
    private int next;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        Random random = new Random(1);
        tokens = new int[PROMPTS][];
        tokenBytes = new byte[PROMPTS][];
        for (int p = 0; p < PROMPTS; p++) {
            tokens[p] = random.ints(PROMPT_TOKENS, 0, 152_064).toArray();
            ByteBuffer bytes = ByteBuffer.allocate(4 * PROMPT_TOKENS).order(ByteOrder.LITTLE_ENDIAN);
            bytes.asIntBuffer().put(tokens[p]);
            tokenBytes[p] = bytes.array();
        }
        vllmSha256 = BlockHasher.create(HashScheme.SHA256, "0");
        vllmSha256Cbor = BlockHasher.create(HashScheme.SHA256_CBOR, "0");
        vllmXxhash = BlockHasher.create(HashScheme.XXHASH, "0");
        vllmXxhashCbor = BlockHasher.create(HashScheme.XXHASH_CBOR, "0");
        dynamoKvbmV1 = BlockHasher.create(HashScheme.KVBM_V1, null);
        dynamoRouter = BlockHasher.create(HashScheme.DYNAMO_ROUTER, null);
        sha256 = MessageDigest.getInstance("SHA-256");
        extra = extraKeys ? ExtraKeys.of("sql-lora", "tenant-a") : ExtraKeys.NONE;
    }

    private int nextPrompt() {
        next = (next + 1) % PROMPTS;
        return next;
    }

    @Benchmark
    public List<BlockHash> vllmSha256() {
        return vllmSha256.hashPrompt(tokens[nextPrompt()], BLOCK_SIZE, extra);
    }

    @Benchmark
    public List<BlockHash> vllmSha256Cbor() {
        return vllmSha256Cbor.hashPrompt(tokens[nextPrompt()], BLOCK_SIZE, extra);
    }

    @Benchmark
    public List<BlockHash> vllmXxhash() {
        return vllmXxhash.hashPrompt(tokens[nextPrompt()], BLOCK_SIZE, extra);
    }

    @Benchmark
    public List<BlockHash> vllmXxhashCbor() {
        return vllmXxhashCbor.hashPrompt(tokens[nextPrompt()], BLOCK_SIZE, extra);
    }

    @Benchmark
    public List<BlockHash> dynamoKvbmV1() {
        return dynamoKvbmV1.hashPrompt(tokens[nextPrompt()], BLOCK_SIZE, extra);
    }

    @Benchmark
    public List<BlockHash> dynamoRouter() {
        return dynamoRouter.hashPrompt(tokens[nextPrompt()], BLOCK_SIZE, extra);
    }

    @Benchmark
    public byte[] rawSha256() {
        return sha256.digest(tokenBytes[nextPrompt()]);
    }

    @Benchmark
    public long rawXxh3() {
        return LongHashFunction.xx3().hashBytes(tokenBytes[nextPrompt()]);
    }

    @Benchmark
    public long[] rawXxh3x128() {
        return LongTupleHashFunction.xx128().hashBytes(tokenBytes[nextPrompt()]);
    }
}
