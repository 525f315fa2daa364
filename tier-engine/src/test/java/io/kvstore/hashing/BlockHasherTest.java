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

/** What both schemes promise, checked for each. */
class BlockHasherTest {

    private static BlockHasher hasher(HashScheme scheme) {
        return BlockHasher.create(scheme, scheme == HashScheme.SHA256_CBOR ? "0" : null);
    }

    @Test
    void schemesParseFromTheirWireNames() {
        assertThat(HashScheme.parse("sha256_cbor")).isEqualTo(HashScheme.SHA256_CBOR);
        assertThat(HashScheme.parse(" xxh3 ")).isEqualTo(HashScheme.XXH3);
        assertThat(HashScheme.XXH3.hashLength()).isEqualTo(8);
        assertThat(HashScheme.SHA256_CBOR.hashLength()).isEqualTo(32);
    }

    @Test
    void anUnknownSchemeNamesTheAllowedOnes() {
        assertThatThrownBy(() -> HashScheme.parse("sha256"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown hash scheme 'sha256'; allowed: sha256_cbor, xxh3");
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
        assertThatThrownBy(() -> hasher.hashBlock(null, tokens, 16, 32, ExtraKeys.NONE))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-5 at index 20");
        assertThatThrownBy(() -> hasher.hashPrompt(tokens, 0, ExtraKeys.NONE))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("block size must be positive, got 0");
        assertThatThrownBy(() -> hasher.hashBlock(null, tokens, 30, 40, ExtraKeys.NONE))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("token range [30, 40) is empty or outside 32 tokens");
        assertThat(hasher.hashPrompt(seq(0, 15), 16, ExtraKeys.NONE)).isEmpty();
    }

    @Test
    void extraKeysAcceptOnlyWhatBothEnginesCanHash() {
        assertThatThrownBy(() -> new ExtraKeys(null, null, List.of(1.5)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("extra key 0 is a java.lang.Double");
        assertThatThrownBy(() -> new ExtraKeys(null, null, List.of(List.of("ok", new Object()))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("extra key 0[1]");
        assertThatThrownBy(() -> ExtraKeys.of("lora\uD800", null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("LoRA name has an unpaired surrogate at index 4 and so no UTF-8 form");
        assertThat(ExtraKeys.of("emoji \uD83D\uDE00", null).loraName()).isEqualTo("emoji \uD83D\uDE00");
    }

    @Test
    void sha256CborRequiresASeedFromTheNamespace() {
        assertThatThrownBy(() -> BlockHasher.create(HashScheme.SHA256_CBOR, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sha256_cbor needs");
    }
}
