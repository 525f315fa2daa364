package io.kvstore.hashing;

import static io.kvstore.hashing.GoldenTokens.WIDE;
import static io.kvstore.hashing.GoldenTokens.hex;
import static io.kvstore.hashing.GoldenTokens.seq;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code vllm:sha256_cbor} against the vectors of docs/hashing/golden_sha256_cbor.py (Python stdlib: a
 * hand-written canonical CBOR encoder + hashlib), which predate the cbor2-based golden_vllm.py and agree
 * with it.
 */
class Sha256CborVectorsTest {

    private final VllmHasher seed0 = new VllmHasher(HashScheme.SHA256_CBOR, "0");

    @Test
    void noneHashIsSha256OfTheCborSeedString() {
        assertThat(seed0.noneHash().hex())
                .isEqualTo("4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e");
        assertThat(new VllmHasher(HashScheme.SHA256_CBOR, "42").noneHash().hex())
                .isEqualTo("9fa6eb003f14425eb9c8e6baacfbcaab26257357b829c7bfa74ffcc4f31c1780");
    }

    @Test
    void oneBlockMatchesVllm() {
        assertThat(hex(seed0.hashPrompt(seq(0, 16), 16, ExtraKeys.NONE)))
                .containsExactly("d830de3d42c00f25a2949b5d12d98642664a44872c1614c5b0147556276afc9c");
        assertThat(hex(new VllmHasher(HashScheme.SHA256_CBOR, "42").hashPrompt(seq(0, 16), 16, ExtraKeys.NONE)))
                .containsExactly("63876f948a5f9ef88191c7d6554fbeeea5c622d4da15d0d527bd352623590b0d");
    }

    @Test
    void threeChainedBlocksMatchVllmAndTheTrailingPartialBlockIsIgnored() {
        assertThat(hex(seed0.hashPrompt(seq(1000, 53), 16, ExtraKeys.NONE)))
                .containsExactly(
                        "749fdc796f99efd836e0126282116392f5a5e4ea5c7ed009f2f58c385525a1f5",
                        "2d5697df551c58c422455b94c9c0db1ddfc2a375c20b0014c82e2a1e69c1d12a",
                        "9bc8fffb32c004317d2644e9bb8aea87ba79800dcae35b235e6a96ce6a96239b");
    }

    @Test
    void loraNameGoesOnEveryBlockAndCacheSaltOnTheFirstOnly() {
        assertThat(hex(seed0.hashPrompt(seq(0, 32), 16, ExtraKeys.of("sql-lora", "tenant-a"))))
                .containsExactly(
                        "83c16040d24a32798c0775138bf9bca3cedb3bca889d813ccbe5b1591b966c61",
                        "0c45318bb9fdd24ecb398ab264e2fe27d33977cff40ae4d92bb22f836df98bea");
        List<String> saltOnly = hex(seed0.hashPrompt(seq(0, 32), 16, ExtraKeys.of(null, "tenant-a")));
        assertThat(saltOnly)
                .containsExactly(
                        "a31aa6d7bd52d1db44c2e2c50ce6687164f2a198c45e6f9c6f5025e7d8dff1f7",
                        "39f45a6b06306f789ee0b456170e79d009c2e4f00c40d6e0204a2bf77e478439");
    }

    @Test
    void anEmptyCacheSaltIsNoSaltAsInVllm() {
        assertThat(seed0.hashPrompt(seq(0, 32), 16, ExtraKeys.of(null, "")))
                .isEqualTo(seed0.hashPrompt(seq(0, 32), 16, ExtraKeys.NONE));
    }

    @Test
    void requestWideKeysFollowTheLoraNameOnEveryBlock() {
        ExtraKeys extra =
                new ExtraKeys("sql-lora", null, List.of("mm:abc", 7, -1L, new byte[] {1, 2}, List.of("img", 3)));
        assertThat(hex(seed0.hashPrompt(seq(0, 32), 16, extra)))
                .containsExactly(
                        "160f5400d61331e2cb00a7475d4e2e45cf8b8d6a74642cc1cb64f1d9ba4b58b6",
                        "ecb2f52828ef452d32775660cfcd2b6fe1d7d9e2e020d900da0bc60c59c56a42");
    }

    @Test
    void tokenIdsAtAndAbove2To16AndUpTo2To31Minus1MatchVllm() {
        assertThat(hex(seed0.hashPrompt(WIDE, 16, ExtraKeys.NONE)))
                .containsExactly("8f60196ec3e0a19ba723f2224259e1e5a055e5ad17d6d26f7786ae61d32a0483");
    }

    @Test
    void smallBlocksMatchVllm() {
        assertThat(hex(seed0.hashPrompt(seq(5, 8), 4, ExtraKeys.NONE)))
                .containsExactly(
                        "8adbee3f8484f7c03bc63994cf7b2d88778fc224cf94c373596081d0e60fd607",
                        "dd5382f86641d05fa4a9bffa899185c7d51802fe417b7bc7d6f6b11bd058f36c");
    }

    @Test
    void aParentSentByTheEngineContinuesItsChain() {
        assertThat(hex(seed0.hashPrompt(seq(1000, 32), 16, ExtraKeys.NONE)))
                .containsExactly(
                        "749fdc796f99efd836e0126282116392f5a5e4ea5c7ed009f2f58c385525a1f5",
                        "2d5697df551c58c422455b94c9c0db1ddfc2a375c20b0014c82e2a1e69c1d12a");
    }
}
