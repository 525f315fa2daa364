package io.kvstore.hashing;

import static io.kvstore.hashing.GoldenTokens.WIDE;
import static io.kvstore.hashing.GoldenTokens.hex;
import static io.kvstore.hashing.GoldenTokens.seq;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import net.openhft.hashing.LongHashFunction;
import org.junit.jupiter.api.Test;

/** {@code dynamo:kvbm_v1} against the vectors of docs/hashing/golden_xxh3.c (the C reference, libxxhash). */
class Xxh3HasherTest {

    private final Xxh3Hasher perRequest = new Xxh3Hasher(HashScheme.KVBM_V1);
    private final Xxh3Hasher saltHash0 = new Xxh3Hasher(HashScheme.KVBM_V1, 0);

    @Test
    void saltPayloadIsCompactJsonWithNullFieldsLeftOutAndEmptyOnesKept() {
        assertThat(json(null, null)).isEqualTo("{}");
        assertThat(json("", "")).isEqualTo("{\"salt\":\"\",\"lora_name\":\"\"}");
        assertThat(json("tenant-a", "sql-lora")).isEqualTo("{\"salt\":\"tenant-a\",\"lora_name\":\"sql-lora\"}");
        assertThat(json(null, "sql-lora")).isEqualTo("{\"lora_name\":\"sql-lora\"}");
        assertThat(json("tenant \"é\"\t\\\u0001", null)).isEqualTo("{\"salt\":\"tenant \\\"é\\\"\\t\\\\\\u0001\"}");
    }

    @Test
    void saltHashesMatchTheCReference() {
        assertThat(Xxh3Hasher.saltHash(HashScheme.KVBM_V1, null, null)).isEqualTo(0x1349cde127705c16L);
        assertThat(Xxh3Hasher.saltHash(HashScheme.KVBM_V1, "tenant-a", "sql-lora"))
                .isEqualTo(0xb7bb39e937faba56L);
        assertThat(Xxh3Hasher.saltHash(HashScheme.KVBM_V1, null, "sql-lora")).isEqualTo(0x99b9dad4cd160eb0L);
        assertThat(Xxh3Hasher.saltHash(HashScheme.KVBM_V1, "tenant \"é\"\t\\\u0001", null))
                .isEqualTo(0xd318189ecf2fce05L);
    }

    @Test
    void oneBlockMatchesTheCReference() {
        assertThat(hex(saltHash0.hashPrompt(seq(0, 16), 16, ExtraKeys.NONE))).containsExactly("79c2079c74a8ee4d");
        assertThat(hex(perRequest.hashPrompt(seq(0, 16), 16, ExtraKeys.NONE))).containsExactly("830d22e0c9126a99");
    }

    @Test
    void threeChainedBlocksMatchTheCReferenceAndTheTrailingPartialBlockIsIgnored() {
        assertThat(hex(saltHash0.hashPrompt(seq(1000, 53), 16, ExtraKeys.NONE)))
                .containsExactly("2b1e84fe7c4fd6fb", "995ef25da013b7bf", "5f3228cadeedc6f9");
        assertThat(hex(perRequest.hashPrompt(seq(1000, 53), 16, ExtraKeys.NONE)))
                .containsExactly("199ba7f056dcbc8d", "2db9a8be4d465f01", "d0a83c1db798727c");
    }

    @Test
    void loraNameAndCacheSaltSeedEveryBlockThroughTheSaltHash() {
        assertThat(hex(perRequest.hashPrompt(seq(0, 32), 16, ExtraKeys.of("sql-lora", "tenant-a"))))
                .containsExactly("fc0b8b77af857568", "7c23d9a32eee0554");
        assertThat(hex(perRequest.hashPrompt(seq(0, 32), 16, ExtraKeys.of("sql-lora", null))))
                .containsExactly("3369ad1be860bc8e", "6aa2d2262f34c61b");
        assertThat(hex(perRequest.hashPrompt(seq(0, 32), 16, ExtraKeys.of(null, "tenant \"é\"\t\\\u0001"))))
                .containsExactly("47375bafba0447a5", "e01c10e4a4c96c26");
    }

    @Test
    void tokenIdsAtAndAbove2To16AndUpTo2To31Minus1MatchTheCReference() {
        assertThat(hex(perRequest.hashPrompt(WIDE, 16, ExtraKeys.NONE))).containsExactly("cb17e0ece156aad8");
    }

    @Test
    void smallBlocksMatchTheCReference() {
        assertThat(hex(perRequest.hashPrompt(seq(5, 8), 4, ExtraKeys.NONE)))
                .containsExactly("4475385afa607c29", "9560d67078248e0c");
    }

    @Test
    void littleEndianTokenBytesHashLikeTheIntArray() {
        LongHashFunction xxh3 = LongHashFunction.xx3(0x1349cde127705c16L);
        assertThat(xxh3.hashBytes(Xxh3Hasher.littleEndian(WIDE, 2, 12)))
                .isEqualTo(Xxh3Hasher.blockHash(xxh3, WIDE, 2, 12));
    }

    @Test
    void aFixedSaltHashRefusesRequestsThatCarryLoraOrSalt() {
        assertThatThrownBy(() -> saltHash0.hashPrompt(seq(0, 16), 16, ExtraKeys.of("sql-lora", null)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fixed salt hash 0");
    }

    @Test
    void furtherExtraKeysAreRefused() {
        ExtraKeys extra = new ExtraKeys(null, null, List.of("mm:abc"));
        assertThatThrownBy(() -> perRequest.hashPrompt(seq(0, 16), 16, extra))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 further extra keys");
    }

    @Test
    void theNamespaceSeedIsAFixedSaltHash() {
        assertThat(hex(BlockHasher.create(HashScheme.KVBM_V1, "0").hashPrompt(seq(0, 16), 16, ExtraKeys.NONE)))
                .containsExactly("79c2079c74a8ee4d");
        assertThat(hex(BlockHasher.create(HashScheme.KVBM_V1, "0x1349cde127705c16")
                        .hashPrompt(seq(0, 16), 16, null)))
                .containsExactly("830d22e0c9126a99");
        assertThat(hex(BlockHasher.create(HashScheme.KVBM_V1, "18446744073709551615")
                        .hashPrompt(seq(0, 16), 16, null)))
                .hasSize(1);
        assertThatThrownBy(() -> BlockHasher.create(HashScheme.KVBM_V1, "salty"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'salty'");
    }

    private static String json(String salt, String lora) {
        return new String(Xxh3Hasher.saltPayload(salt, lora), StandardCharsets.UTF_8);
    }
}
