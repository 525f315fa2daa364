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

    @Test
    void paddingInPlaceEqualsTheJdksAtEveryLengthAndTouchesOnlyThePaddingRoom() throws Exception {
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        Sha256 sha = Sha256.create();
        MessageDigest jdk = MessageDigest.getInstance("SHA-256");
        for (int round = 0; round < 2; round++) { // the context is reused: nothing of one digest leaks into the next
            for (int length = 0; length <= 300; length++) {
                int offset = random.nextInt(20);
                byte[] data = new byte[offset + Sha256.paddedLength(length) + 7];
                random.nextBytes(data);
                byte[] before = data.clone();
                jdk.update(data, offset, length);
                byte[] expected = jdk.digest();
                byte[] out = new byte[40];
                sha.digestPaddingInPlace(data, offset, length, out, 3);
                assertThat(Arrays.copyOfRange(out, 3, 35))
                        .as("length %d at offset %d (seed %d)", length, offset, seed)
                        .isEqualTo(expected);
                int end = offset + Sha256.paddedLength(length);
                assertThat(Arrays.copyOfRange(data, 0, offset + length))
                        .isEqualTo(Arrays.copyOfRange(before, 0, offset + length));
                assertThat(Arrays.copyOfRange(data, end, data.length))
                        .isEqualTo(Arrays.copyOfRange(before, end, before.length));
            }
        }
    }

    @Test
    void paddedLengthLeavesRoomForTheMarkerAndTheBitLength() {
        assertThat(Sha256.paddedLength(0)).isEqualTo(64);
        assertThat(Sha256.paddedLength(55)).isEqualTo(64);
        assertThat(Sha256.paddedLength(56)).isEqualTo(128);
        assertThat(Sha256.paddedLength(119)).isEqualTo(128);
        assertThat(Sha256.paddedLength(120)).isEqualTo(192);
    }

    @Test
    void paddingInPlaceMayWriteTheDigestOverItsOwnMessage() throws Exception {
        byte[] chain = new byte[133 + 72];
        byte[] reference = new byte[133];
        Sha256 sha = Sha256.create();
        MessageDigest jdk = MessageDigest.getInstance("SHA-256");
        for (int block = 0; block < 100; block++) {
            sha.digestPaddingInPlace(chain, 0, 133, chain, 13);
            jdk.update(reference);
            jdk.digest(reference, 13, 32);
        }
        assertThat(Arrays.copyOf(chain, 133)).isEqualTo(reference);
    }

    @Test
    void paddingInPlaceRefusesAnArrayWithoutRoomForThePadding() {
        Sha256 sha = Sha256.create();
        byte[] data = new byte[100];
        byte[] before = data.clone();
        assertThatThrownBy(() -> sha.digestPaddingInPlace(data, 0, 60, new byte[32], 0))
                .isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(data).isEqualTo(before);
    }
}
