package io.kvstore.hashing;

import static io.kvstore.hashing.GoldenTokens.seq;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** What the vLLM schemes refuse, and how multimodal keys land on blocks. */
class VllmHasherTest {

    private final VllmHasher sha256 = new VllmHasher(HashScheme.SHA256, "0");

    private static ExtraKeys images(MultimodalItem... items) {
        return new ExtraKeys(null, null, List.of(), List.of(items), List.of());
    }

    @Test
    void anImageChangesOnlyTheBlocksItOverlapsAndThoseAfterThem() {
        List<io.kvstore.block.BlockHash> plain = sha256.hashPrompt(seq(0, 64), 16, ExtraKeys.NONE);
        List<io.kvstore.block.BlockHash> withImage =
                sha256.hashPrompt(seq(0, 64), 16, images(new MultimodalItem("img", 20, 8)));
        assertThat(withImage.get(0)).isEqualTo(plain.get(0));
        assertThat(withImage.subList(1, 4)).doesNotContainAnyElementsOf(plain);
    }

    @Test
    void itemsMayBeGivenInAnyOrder() {
        MultimodalItem a = new MultimodalItem("img-a", 4, 20);
        MultimodalItem b = new MultimodalItem("img-b", 24, 8);
        assertThat(sha256.hashPrompt(seq(0, 64), 16, images(b, a)))
                .isEqualTo(sha256.hashPrompt(seq(0, 64), 16, images(a, b)));
    }

    @Test
    void anItemPastThePromptIsRefusedNamingIt() {
        assertThatThrownBy(() -> sha256.hashPrompt(
                        seq(0, 32), 16, images(new MultimodalItem("a", 0, 4), new MultimodalItem("b", 30, 4))))
                .isInstanceOf(HashInputException.class)
                .hasMessage("multimodal[1]: tokens [30, 34) lie past the prompt's 32 tokens")
                .satisfies(e -> assertThat(((HashInputException) e).field()).isEqualTo("multimodal[1]"));
    }

    @Test
    void overlappingItemsAreRefused() {
        assertThatThrownBy(() -> sha256.hashPrompt(
                        seq(0, 32), 16, images(new MultimodalItem("b", 8, 8), new MultimodalItem("a", 0, 10))))
                .isInstanceOf(HashInputException.class)
                .hasMessageStartingWith("multimodal[0]: tokens [8, 16) overlap multimodal[1]");
    }

    @Test
    void itemsNeedAnIdentifierAndAPositiveLength() {
        assertThatThrownBy(() -> new MultimodalItem("a", 0, 0)).hasMessage("length must be positive, got 0");
        assertThatThrownBy(() -> new MultimodalItem("a", -1, 2)).hasMessage("offset must not be negative, got -1");
        assertThatThrownBy(() -> new MultimodalItem(null, 0, 2)).hasMessageContaining("identifier");
    }

    @Test
    void promptEmbeddingsNeedOneHashPerFullBlock() {
        ExtraKeys two = new ExtraKeys(null, null, List.of(), List.of(), List.of(new byte[32], new byte[32]));
        assertThatThrownBy(() -> sha256.hashPrompt(new int[50], 16, two))
                .isInstanceOf(HashInputException.class)
                .hasMessage(
                        "promptEmbeds: gives 2 block hashes for a prompt of 3 full blocks; give one per full block");
        assertThatThrownBy(() -> new ExtraKeys(null, null, List.of(), List.of(), List.of(new byte[31])))
                .isInstanceOf(HashInputException.class)
                .hasMessageStartingWith("promptEmbeds[0]: a prompt-embedding block hash is a 32-byte SHA-256 digest");
    }

    @Test
    void noneHashIsTheDigestOfTheSeedAlone() {
        // sha256(pickle.dumps("0", protocol=5)) and sha256(pickle.dumps("", protocol=5)) in CPython
        assertThat(sha256.noneHash().hex())
                .isEqualTo(java.util.HexFormat.of().formatHex(sha256Of("80059505000000000000008c0130942e")));
        assertThat(new VllmHasher(HashScheme.SHA256, "").noneHash().hex())
                .isEqualTo(java.util.HexFormat.of().formatHex(sha256Of("80059504000000000000008c00942e")));
    }

    private static byte[] sha256Of(String hex) {
        try {
            return java.security.MessageDigest.getInstance("SHA-256")
                    .digest(java.util.HexFormat.of().parseHex(hex));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
