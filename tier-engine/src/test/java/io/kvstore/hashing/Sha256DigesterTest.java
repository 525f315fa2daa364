package io.kvstore.hashing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class Sha256DigesterTest {

    @Test
    void blockHashesUseLibcryptoWhereItIsInstalled() {
        assertThat(Sha256Digester.create().implementation())
                .as(Sha256Digester.describe())
                .isEqualTo("libcrypto");
    }

    @Test
    void libcryptoAndTheJdkGiveTheSameDigestsOnChainedMessages() {
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        Sha256Digester fast = Sha256Digester.create();
        Sha256Digester jdk = Sha256Digester.jdkOnly();
        for (int length = 45; length <= 400; length++) {
            byte[] a = new byte[length];
            random.nextBytes(a);
            byte[] b = a.clone();
            for (int block = 0; block < 3; block++) { // each digest becomes part of the next message
                fast.digest(a, length, a, 13);
                jdk.digest(b, length, b, 13);
            }
            assertThat(a).as("length %d (seed %d)", length, seed).isEqualTo(b);
            assertThat(Arrays.equals(a, new byte[length])).isFalse();
        }
    }

    @Test
    void paddingInPlaceGivesTheJdksDigestsOnChainedMessages() {
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        Sha256Digester fast = Sha256Digester.create();
        Sha256Digester jdk = Sha256Digester.jdkOnly();
        for (int length = 45; length <= 400; length++) {
            byte[] a = new byte[length + 72 /* 0x80, up to 63 zeros, the 8-byte length */];
            random.nextBytes(a);
            byte[] b = Arrays.copyOf(a, length);
            for (int block = 0; block < 3; block++) { // each digest becomes part of the next message
                fast.digestPaddingInPlace(a, length, a, 13);
                jdk.digest(b, length, b, 13);
            }
            assertThat(Arrays.copyOf(a, length))
                    .as("length %d (seed %d)", length, seed)
                    .isEqualTo(b);
        }
    }
}
