package io.kvstore.bench.hashing;

import io.kvstore.hashing.BlockHasher;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.hashing.HashScheme;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import net.openhft.hashing.LongHashFunction;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Hashing a 32k-token prompt in blocks of 16 with both schemes, beside the raw hash of the same token
 * bytes (one SHA-256 / one xxh3 over 128 KiB) so the ratio shows the cost of CBOR framing and chaining.
 * Throughput in prompts per second; tokens/s = score x 32,768.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class HashingBenchmark {

    private static final int TOKENS = 32_768;

    private int[] prompt;
    private byte[] promptBytes;
    private BlockHasher sha256Cbor;
    private BlockHasher xxh3;
    private final ExtraKeys extra = new ExtraKeys("lora-a", "tenant-1", List.of());

    @Setup
    public void setUp() {
        SplittableRandom random = new SplittableRandom(7);
        prompt = new int[TOKENS];
        ByteBuffer bytes = ByteBuffer.allocate(4 * TOKENS).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < TOKENS; i++) {
            prompt[i] = random.nextInt(152_000);
            bytes.putInt(prompt[i]);
        }
        promptBytes = bytes.array();
        sha256Cbor = BlockHasher.of(HashScheme.SHA256_CBOR, "0");
        xxh3 = BlockHasher.of(HashScheme.XXH3, null);
    }

    @Benchmark
    public Object sha256CborPrompt() {
        return sha256Cbor.hashPrompt(prompt, 16, extra);
    }

    @Benchmark
    public Object xxh3Prompt() {
        return xxh3.hashPrompt(prompt, 16, extra);
    }

    @Benchmark
    public byte[] referenceRawSha256() throws Exception {
        return MessageDigest.getInstance("SHA-256").digest(promptBytes);
    }

    @Benchmark
    public long referenceRawXxh3() {
        return LongHashFunction.xx3().hashBytes(promptBytes);
    }
}
