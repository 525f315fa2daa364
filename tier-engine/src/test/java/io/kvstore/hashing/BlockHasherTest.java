package io.kvstore.hashing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.catalog.BlockHash;
import io.kvstore.catalog.BlockKey;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Golden vectors from docs/hashing (Python stdlib for sha256_cbor, xxHash's C library for xxh3). */
class BlockHasherTest {

    private static final int[] ONE_BLOCK = IntStream.range(0, 16).toArray();
    private static final int[] THREE_BLOCKS = IntStream.range(0, 48).map(i -> i * 7 + 1).toArray();
    private static final int[] EXTRA = IntStream.range(100, 132).toArray();
    private static final int[] LARGE_IDS = {65536, 2147483647, 100000, 2147483647, 70000, 65535, 255, 256, 23, 24,
            0, 1, 2147483646, 131072, 99, 1 << 20};
    private static final int[] PARTIAL_TAIL = IntStream.range(0, 40).toArray();
    private static final ExtraKeys KEYS = new ExtraKeys("my-lora", "tenant-a", List.of("mm-hash-1", 42));

    private final BlockHasher sha = BlockHasher.of(HashScheme.SHA256_CBOR, "0");
    private final BlockHasher xxh3 = BlockHasher.of(HashScheme.XXH3, null);

    private static List<String> hex(List<BlockHash> hashes) {
        return hashes.stream().map(BlockHash::hex).toList();
    }

    @Test
    void sha256CborNoneHashMatchesVllmWithSeedZero() {
        assertThat(((Sha256CborHasher) sha).noneHash().hex())
                .isEqualTo("4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e");
    }

    @Test
    void sha256CborMatchesGoldenVectors() {
        assertThat(hex(sha.hashPrompt(ONE_BLOCK, 16, ExtraKeys.NONE)))
                .containsExactly("d830de3d42c00f25a2949b5d12d98642664a44872c1614c5b0147556276afc9c");
        assertThat(hex(sha.hashPrompt(THREE_BLOCKS, 16, ExtraKeys.NONE))).containsExactly(
                "0535e19eab2f905ab4566c98f7a5ebcdb4aac35cc02fd97b292c895e2ed27ed3",
                "4648f732e1bad3fea10cacb6b64424bf9d100727397929c1d8338bd3043bd5bf",
                "1997ab6051e75e0a527515d0085c35a0ebf3139a30c8efb228a58277ca1dfaf5");
        assertThat(hex(sha.hashPrompt(EXTRA, 16, KEYS))).containsExactly(
                "73c155b1b7b8170ff9c184e6c7b11ae72c9db75bc1cb91dc2abe73ffe2b95ca8",
                "585f61038e60a18c95daa5006cb73502941640ab62067245b26e36517f6b1835");
        assertThat(hex(sha.hashPrompt(LARGE_IDS, 16, ExtraKeys.NONE)))
                .containsExactly("e027adb15af422e5c68e32872f0367d0509d1d4759cdcf9e1950fe8790223fb2");
        assertThat(hex(BlockHasher.of(HashScheme.SHA256_CBOR, "42").hashPrompt(PARTIAL_TAIL, 16, null))).containsExactly(
                "63876f948a5f9ef88191c7d6554fbeeea5c622d4da15d0d527bd352623590b0d",
                "78a71559304e96e785d46658e382ff9b8b5f10f918102e3ac1b4060a29bae320");
    }

    @Test
    void xxh3MatchesGoldenVectors() {
        assertThat(hex(xxh3.hashPrompt(ONE_BLOCK, 16, ExtraKeys.NONE))).containsExactly("79c2079c74a8ee4d");
        assertThat(hex(xxh3.hashPrompt(THREE_BLOCKS, 16, ExtraKeys.NONE)))
                .containsExactly("2bae67c47312d019", "bcb6498e61fd9d3b", "56eff67a35a0c3c4");
        assertThat(Long.toHexString(Xxh3Hasher.saltHash(KEYS))).isEqualTo("14608f2b95e73fb1");
        assertThat(hex(xxh3.hashPrompt(EXTRA, 16, KEYS))).containsExactly("00a39711457501e9", "0c915764b4464b33");
        assertThat(hex(xxh3.hashPrompt(LARGE_IDS, 16, ExtraKeys.NONE))).containsExactly("a25043fac22feed8");
        assertThat(hex(xxh3.hashPrompt(PARTIAL_TAIL, 16, ExtraKeys.NONE)))
                .containsExactly("79c2079c74a8ee4d", "ca37f0ea43b0cef2");
    }

    @Test
    void hashBlockOneAtATimeEqualsHashPrompt() {
        for (BlockHasher hasher : List.of(sha, xxh3)) {
            List<BlockHash> whole = hasher.hashPrompt(EXTRA, 16, KEYS);
            BlockHash first = hasher.hashBlock(null, EXTRA, 0, 16, 0, KEYS);
            BlockHash second = hasher.hashBlock(first, EXTRA, 16, 32, 1, KEYS);
            assertThat(List.of(first, second)).isEqualTo(whole);
        }
    }

    @Test
    void cacheSaltSeparatesTenantsAndLoraSeparatesAdapters() {
        for (BlockHasher hasher : List.of(sha, xxh3)) {
            List<BlockHash> plain = hasher.hashPrompt(THREE_BLOCKS, 16, ExtraKeys.NONE);
            List<BlockHash> salted = hasher.hashPrompt(THREE_BLOCKS, 16, new ExtraKeys(null, "tenant-b", List.of()));
            List<BlockHash> lora = hasher.hashPrompt(THREE_BLOCKS, 16, new ExtraKeys("adapter", null, List.of()));
            assertThat(salted).doesNotContainAnyElementsOf(plain);
            assertThat(lora).doesNotContainAnyElementsOf(plain).doesNotContainAnyElementsOf(salted);
        }
    }

    @Test
    void onlyFullBlocksAreHashed() {
        assertThat(sha.hashPrompt(IntStream.range(0, 15).toArray(), 16, null)).isEmpty();
        assertThat(xxh3.hashPrompt(PARTIAL_TAIL, 16, null)).hasSize(2);
    }

    @Test
    void sameTokensInDifferentNamespacesAreDifferentKeys() {
        BlockHash hash = sha.hashPrompt(ONE_BLOCK, 16, null).getFirst();
        assertThat(new BlockKey("llama-3-8b", hash)).isNotEqualTo(new BlockKey("mistral-7b", hash));
    }

    @Test
    void badInputIsRefusedClearly() {
        assertThatThrownBy(() -> sha.hashPrompt(new int[] {1, -2}, 1, null)).hasMessageContaining("position 1 is negative");
        assertThatThrownBy(() -> xxh3.hashPrompt(ONE_BLOCK, 0, null)).hasMessageContaining("block size");
        assertThatThrownBy(() -> HashScheme.parse("md5")).hasMessageContaining("sha256_cbor, xxh3");
        assertThatThrownBy(() -> new Sha256CborHasher(null)).hasMessageContaining("PYTHONHASHSEED");
        assertThatThrownBy(() -> new ExtraKeys(null, null, List.of(1.5))).hasMessageContaining("strings or integers");
    }

    @Test
    void hashingIsDeterministicAcrossThreads() throws Exception {
        int[] prompt = IntStream.range(0, 4096).map(i -> i * 31 % 50_000).toArray();
        List<BlockHash> expectedSha = sha.hashPrompt(prompt, 16, KEYS);
        List<BlockHash> expectedXxh3 = xxh3.hashPrompt(prompt, 16, KEYS);
        try (var pool = Executors.newFixedThreadPool(8)) {
            List<Callable<Boolean>> tasks = IntStream.range(0, 32).<Callable<Boolean>>mapToObj(i -> () ->
                    sha.hashPrompt(prompt, 16, KEYS).equals(expectedSha)
                            && xxh3.hashPrompt(prompt, 16, KEYS).equals(expectedXxh3)).toList();
            for (var result : pool.invokeAll(tasks)) {
                assertThat(result.get()).isTrue();
            }
        }
    }
}
