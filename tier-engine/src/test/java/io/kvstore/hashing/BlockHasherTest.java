package io.kvstore.hashing;

import static io.kvstore.hashing.GoldenTokens.seq;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** What every scheme promises, checked for each. */
class BlockHasherTest {

    private static BlockHasher hasher(HashScheme scheme) {
        return BlockHasher.create(scheme, scheme.isVllm() ? "0" : null);
    }

    @Test
    void schemesParseFromTheEnginesNamesAndTheOldAliases() {
        assertThat(HashScheme.parse("vllm:sha256")).isEqualTo(HashScheme.SHA256);
        assertThat(HashScheme.parse("vllm:sha256_cbor")).isEqualTo(HashScheme.SHA256_CBOR);
        assertThat(HashScheme.parse("vllm:xxhash")).isEqualTo(HashScheme.XXHASH);
        assertThat(HashScheme.parse("vllm:xxhash_cbor")).isEqualTo(HashScheme.XXHASH_CBOR);
        assertThat(HashScheme.parse("dynamo:kvbm_v1")).isEqualTo(HashScheme.KVBM_V1);
        assertThat(HashScheme.parse("dynamo:router")).isEqualTo(HashScheme.DYNAMO_ROUTER);
        assertThat(HashScheme.parse("sha256_cbor")).isEqualTo(HashScheme.SHA256_CBOR);
        assertThat(HashScheme.parse(" xxh3 ")).isEqualTo(HashScheme.KVBM_V1);
        assertThat(HashScheme.KVBM_V1.hashLength()).isEqualTo(8);
        assertThat(HashScheme.XXHASH.hashLength()).isEqualTo(16);
        assertThat(HashScheme.SHA256.hashLength()).isEqualTo(32);
    }

    @Test
    void anUnknownSchemeNamesTheAllowedOnes() {
        assertThatThrownBy(() -> HashScheme.parse("sha256"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown hash scheme 'sha256'; allowed: vllm:sha256, vllm:sha256_cbor, vllm:xxhash,"
                        + " vllm:xxhash_cbor, dynamo:kvbm_v1, dynamo:router, sha256_cbor (= vllm:sha256_cbor),"
                        + " xxh3 (= dynamo:kvbm_v1)");
        assertThatThrownBy(() -> HashScheme.parse(null)).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @EnumSource(HashScheme.class)
    void theFactoryGivesTheNamespaceItsScheme(HashScheme scheme) {
        BlockHasher hasher = hasher(scheme);
        assertThat(hasher.scheme()).isEqualTo(scheme);
        assertThat(hasher.hashPrompt(seq(0, 16), 16, ExtraKeys.NONE).getFirst().length())
                .isEqualTo(scheme.hashLength());
    }

    @ParameterizedTest
    @EnumSource(HashScheme.class)
    void sameTokensInDifferentNamespacesGiveDifferentBlockKeys(HashScheme scheme) {
        BlockHash hash =
                hasher(scheme).hashPrompt(seq(0, 16), 16, ExtraKeys.NONE).getFirst();
        BlockKey inA = new BlockKey("llama-3-8b/fp16", hash);
        BlockKey inB = new BlockKey("qwen-2-7b/fp16", hash);
        assertThat(inA).isNotEqualTo(inB);
        assertThat(inA)
                .isEqualTo(new BlockKey(
                        "llama-3-8b/fp16",
                        hasher(scheme).hashPrompt(seq(0, 16), 16, null).getFirst()));
    }

    @ParameterizedTest
    @EnumSource(HashScheme.class)
    void onlyFullBlocksAreHashedAndTheyArePrefixesOfLongerPrompts(HashScheme scheme) {
        BlockHasher hasher = hasher(scheme);
        Random random = new Random(7);
        int[] tokens = random.ints(200, 0, 150_000).toArray();
        List<BlockHash> all = hasher.hashPrompt(tokens, 16, ExtraKeys.of("lora", "salt"));
        assertThat(all).hasSize(12).doesNotHaveDuplicates();
        for (int length : new int[] {0, 15, 16, 17, 31, 32, 100, 191, 192, 199}) {
            int[] prefix = Arrays.copyOf(tokens, length);
            assertThat(hasher.hashPrompt(prefix, 16, ExtraKeys.of("lora", "salt")))
                    .as("prompt of %d tokens", length)
                    .isEqualTo(all.subList(0, length / 16));
        }
    }

    @ParameterizedTest
    @EnumSource(HashScheme.class)
    void loraAndSaltSeparateOtherwiseEqualPrompts(HashScheme scheme) {
        BlockHasher hasher = hasher(scheme);
        int[] tokens = seq(0, 32);
        List<List<BlockHash>> variants = List.of(
                hasher.hashPrompt(tokens, 16, ExtraKeys.NONE),
                hasher.hashPrompt(tokens, 16, ExtraKeys.of("lora-a", null)),
                hasher.hashPrompt(tokens, 16, ExtraKeys.of("lora-b", null)),
                hasher.hashPrompt(tokens, 16, ExtraKeys.of(null, "tenant-a")),
                hasher.hashPrompt(tokens, 16, ExtraKeys.of(null, "tenant-b")));
        for (int block = 0; block < 2; block++) {
            int b = block;
            assertThat(variants.stream().map(v -> v.get(b)).distinct())
                    .as("block %d", block)
                    .hasSize(5);
        }
    }

    @ParameterizedTest
    @EnumSource(HashScheme.class)
    void hashingIsDeterministicAcrossThreads(HashScheme scheme) throws Exception {
        BlockHasher hasher = hasher(scheme);
        Random random = new Random(42);
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            prompts.add(random.ints(16 * (1 + random.nextInt(40)) + random.nextInt(16), 0, 200_000)
                    .toArray());
        }
        List<List<BlockHash>> expected = prompts.stream()
                .map(p -> hasher.hashPrompt(p, 16, ExtraKeys.of("l", "s")))
                .toList();
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            List<Future<Boolean>> results = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int offset = t;
                results.add(pool.submit(() -> {
                    boolean same = true;
                    for (int round = 0; round < 20; round++) {
                        for (int i = 0; i < prompts.size(); i++) {
                            int p = (i + offset * 7 + round) % prompts.size();
                            same &= hasher.hashPrompt(prompts.get(p), 16, ExtraKeys.of("l", "s"))
                                    .equals(expected.get(p));
                        }
                    }
                    return same;
                }));
            }
            for (Future<Boolean> result : results) {
                assertThat(result.get()).isTrue();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(HashScheme.class)
    void badTokensAndBlockSizesAreRejected(HashScheme scheme) {
        BlockHasher hasher = hasher(scheme);
        int[] tokens = seq(0, 32);
        tokens[20] = -5;
        assertThatThrownBy(() -> hasher.hashPrompt(tokens, 16, ExtraKeys.NONE))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("token id -5 at index 20 is negative");
        assertThatThrownBy(() -> hasher.hashPrompt(tokens, 0, ExtraKeys.NONE))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("block size must be positive, got 0");
        assertThat(hasher.hashPrompt(seq(0, 15), 16, ExtraKeys.NONE)).isEmpty();
    }

    @Test
    void extraKeysAcceptOnlyWhatTheEnginesCanHash() {
        assertThatThrownBy(() -> new ExtraKeys(null, null, List.of(1.5)))
                .isInstanceOf(HashInputException.class)
                .hasMessageContaining("more[0]: is a java.lang.Double");
        assertThatThrownBy(() -> new ExtraKeys(null, null, List.of(List.of("ok", new Object()))))
                .isInstanceOf(HashInputException.class)
                .hasMessageContaining("more[0][1]");
        assertThatThrownBy(() -> ExtraKeys.of("lora\uD800", null))
                .isInstanceOf(HashInputException.class)
                .hasMessage("lora: has an unpaired surrogate at index 4 and so no UTF-8 form");
        assertThat(ExtraKeys.of("emoji \uD83D\uDE00", null).loraName()).isEqualTo("emoji \uD83D\uDE00");
    }

    @Test
    void vllmSchemesRequireASeedFromTheNamespaceButAcceptAnEmptyOne() {
        for (HashScheme scheme : HashScheme.values()) {
            if (scheme.isVllm()) {
                assertThatThrownBy(() -> BlockHasher.create(scheme, null))
                        .isInstanceOf(HashInputException.class)
                        .hasMessageContaining(scheme.wireName() + " needs the engine's PYTHONHASHSEED");
                assertThat(BlockHasher.create(scheme, "").scheme()).isEqualTo(scheme);
            }
        }
    }

    @Test
    void vllmSeedsAreWhatPythonAcceptsAsPythonHashSeed() {
        for (String seed : List.of("0", "4294967295", "random", "+7", " 12", "")) {
            assertThat(BlockHasher.create(HashScheme.SHA256, seed).scheme()).isEqualTo(HashScheme.SHA256);
        }
        // a different seed string is a different NONE_HASH, as in vLLM (it hashes the variable's text)
        assertThat(new VllmHasher(HashScheme.SHA256, "+7").noneHash())
                .isNotEqualTo(new VllmHasher(HashScheme.SHA256, "7").noneHash());
        for (String seed : List.of("true", "1.5", "-1", "4294967296", "12 ", "0x10", "salty")) {
            assertThatThrownBy(() -> BlockHasher.create(HashScheme.XXHASH, seed))
                    .as(seed)
                    .isInstanceOf(HashInputException.class)
                    .hasMessageStartingWith("seed: vllm:xxhash takes the engine's PYTHONHASHSEED")
                    .hasMessageContaining("got '" + seed + "'");
        }
    }

    @Test
    void dynamoSeedsAreUnsigned64BitNumbers() {
        assertThatThrownBy(() -> BlockHasher.create(HashScheme.DYNAMO_ROUTER, "tenant"))
                .isInstanceOf(HashInputException.class)
                .hasMessageStartingWith("seed: dynamo:router takes no seed");
        assertThat(BlockHasher.create(HashScheme.KVBM_V1, "0xffffffffffffffff").scheme())
                .isEqualTo(HashScheme.KVBM_V1);
    }
}
