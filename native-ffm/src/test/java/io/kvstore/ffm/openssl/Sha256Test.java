package io.kvstore.ffm.openssl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class Sha256Test {

    @Test
    void libcryptoIsPresentHere() {
        assertThat(Sha256.availability().available())
                .as(
                        "libcrypto (Debian's libssl3, a dependency of python3, which ./kvstore deps installs): %s",
                        Sha256.availability())
                .isTrue();
    }

    @Test
    void digestOfTheEmptyMessageIsTheStandardOne() {
        byte[] out = new byte[32];
        Sha256.create().digest(new byte[0], 0, 0, out, 0);
        assertThat(HexFormat.of().formatHex(out))
                .isEqualTo("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    @Test
    void equalsTheJdksAtEveryLengthOffsetAndDestination() throws Exception {
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        byte[] data = new byte[1024];
        random.nextBytes(data);
        Sha256 sha = Sha256.create();
        MessageDigest jdk = MessageDigest.getInstance("SHA-256");
        for (int length = 0; length <= 300; length++) {
            for (int offset : new int[] {0, 1, 13, 700}) {
                jdk.update(data, offset, length);
                byte[] expected = jdk.digest();
                byte[] out = new byte[40];
                sha.digest(data, offset, length, out, 5);
                assertThat(Arrays.copyOfRange(out, 5, 37))
                        .as("length %d at offset %d (seed %d)", length, offset, seed)
                        .isEqualTo(expected);
                assertThat(out).startsWith(0, 0, 0, 0, 0).endsWith(0, 0, 0);
            }
        }
    }

    @Test
    void digestMayOverwriteItsOwnMessage() throws Exception {
        byte[] chain = new byte[117];
        byte[] reference = chain.clone();
        Sha256 sha = Sha256.create();
        MessageDigest jdk = MessageDigest.getInstance("SHA-256");
        for (int block = 0; block < 100; block++) {
            sha.digest(chain, 0, chain.length, chain, 13);
            jdk.update(reference);
            jdk.digest(reference, 13, 32);
        }
        assertThat(chain).isEqualTo(reference);
    }

    @Test
    void rangesOutsideTheArraysAreRefusedNotRead() {
        Sha256 sha = Sha256.create();
        assertThatThrownBy(() -> sha.digest(new byte[16], 8, 9, new byte[32], 0))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> sha.digest(new byte[16], 0, 16, new byte[40], 9))
                .isInstanceOf(IndexOutOfBoundsException.class);
    }
}
