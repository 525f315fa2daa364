package io.kvstore.block;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class BlockHashTest {

    @Test
    void equalBytesHaveEqualHashCodesWhateverTheFactory() {
        BlockHash a = BlockHash.ofLong(0x0123_4567_89AB_CDEFL);
        BlockHash b = BlockHash.ofHex("0123456789abcdef");
        BlockHash c =
                BlockHash.of(new byte[] {1, 0x23, 0x45, 0x67, (byte) 0x89, (byte) 0xAB, (byte) 0xCD, (byte) 0xEF});
        assertThat(a).isEqualTo(b).isEqualTo(c);
        assertThat(a.hashCode()).isEqualTo(b.hashCode()).isEqualTo(c.hashCode());
    }

    /** vLLM's integer form of a hash in KV events: {@code int.from_bytes(hash[-8:], "big")}. */
    @Test
    void lastLongIsTheLastEightBytesBigEndian() {
        byte[] sha = new byte[32];
        for (int i = 0; i < sha.length; i++) {
            sha[i] = (byte) (0xE0 + i); // the last 8 are 0xF8..0xFF: negative as a signed long
        }
        assertThat(BlockHash.of(sha).lastLong()).isEqualTo(0xF8F9FAFBFCFDFEFFL);
        assertThat(BlockHash.ofLong(0x0123_4567_89AB_CDEFL).lastLong()).isEqualTo(0x0123_4567_89AB_CDEFL);
        assertThat(BlockHash.ofHex("0a0b").lastLong())
                .as("shorter than 8 bytes: all of them")
                .isEqualTo(0x0a0bL);
    }

    /** Every length a hash may have (1 to 64 bytes): the first and last 8 bytes (all when shorter), big-endian. */
    @Test
    void asLongAndLastLongMatchPythonsIntFromBytesForEveryLength() {
        Random random = new Random(15);
        for (int length = 1; length <= 64; length++) {
            byte[] bytes = new byte[length];
            random.nextBytes(bytes);
            BigInteger last = new BigInteger(1, Arrays.copyOfRange(bytes, Math.max(0, length - 8), length));
            BigInteger first = new BigInteger(1, Arrays.copyOf(bytes, Math.min(8, length)));
            BlockHash h = BlockHash.of(bytes);
            assertThat(h.lastLong()).as("lastLong of %d bytes", length).isEqualTo(last.longValue());
            assertThat(h.asLong()).as("asLong of %d bytes", length).isEqualTo(first.longValue());
        }
    }

    /**
     * Consecutive small ids (what a test client or a naive engine sends) must not cluster: with
     * {@code Arrays.hashCode} 4,096 consecutive ids fell into a few hundred of 4,096 buckets.
     */
    @Test
    void consecutiveIdsSpreadOverBucketsLikeRandomValues() {
        Set<Integer> buckets = new HashSet<>();
        for (long id = 0; id < 4096; id++) {
            buckets.add(BlockHash.ofLong(id).hashCode() & 4095);
        }
        // random placement fills 4096 * (1 - 1/e) = 2589 buckets on average, sd about 20
        assertThat(buckets.size()).isGreaterThan(2450);
    }

    /**
     * Hashes a client chose so that Java's plain byte-array hash collides (here: all equal under
     * Arrays.hashCode) still land in different buckets, because the hash is keyed by a process secret.
     */
    @Test
    void inputsCollidingUnderAPlainHashDoNotCollideUnderTheKeyedOne() {
        // every [a, b, c] with 961a + 31b + c equal has the same Arrays.hashCode
        Set<Integer> plain = new HashSet<>();
        Set<Integer> keyed = new HashSet<>();
        int inputs = 0;
        for (int a = -4; a <= 4; a++) {
            for (int b = -128; b <= 127; b++) {
                int c = 1000 - 961 * a - 31 * b;
                if (c >= -128 && c <= 127) {
                    byte[] bytes = {(byte) a, (byte) b, (byte) c};
                    plain.add(Arrays.hashCode(bytes));
                    keyed.add(BlockHash.of(bytes).hashCode());
                    inputs++;
                }
            }
        }
        assertThat(inputs).isGreaterThan(60);
        assertThat(plain).hasSize(1);
        assertThat(keyed).hasSize(inputs);
    }
}
