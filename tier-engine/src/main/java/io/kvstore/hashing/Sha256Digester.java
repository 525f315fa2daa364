package io.kvstore.hashing;

import io.kvstore.ffm.openssl.Sha256;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * SHA-256 of a range of a byte array into a range of another, for one thread: through OpenSSL's
 * libcrypto ({@link Sha256}) where it loads, else through the JDK's {@code MessageDigest}. Both give the
 * same bytes; libcrypto is faster on the short messages of block hashing (see {@link Sha256} and
 * docs/benchmarks.md, "Hashing"), and the JDK's is always there.
 */
final class Sha256Digester {

    private static final boolean LIBCRYPTO = Sha256.availability().available();

    private final Sha256 libcrypto;
    private final MessageDigest jdk;

    private Sha256Digester(boolean useLibcrypto) {
        this.libcrypto = useLibcrypto ? Sha256.create() : null;
        try {
            this.jdk = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JDK has no SHA-256 MessageDigest", e);
        }
    }

    /** A digester through libcrypto where it is available, else the JDK's. */
    static Sha256Digester create() {
        return new Sha256Digester(LIBCRYPTO);
    }

    /** A digester through the JDK's {@code MessageDigest} only (for tests that compare the two). */
    static Sha256Digester jdkOnly() {
        return new Sha256Digester(false);
    }

    /** Which implementation digests: {@code "libcrypto"} or {@code "MessageDigest"}. */
    String implementation() {
        return libcrypto != null ? "libcrypto" : "MessageDigest";
    }

    /** What the block hashes of this JVM use, and why not libcrypto when it is not used (for logs). */
    static String describe() {
        return LIBCRYPTO
                ? "OpenSSL SHA-256 (" + Sha256.availability().detail() + ")"
                : "the JDK's SHA-256 (libcrypto " + Sha256.availability() + ")";
    }

    /** Writes the SHA-256 of {@code data[0, length)} to {@code out[at, at + 32)}; the ranges may overlap. */
    void digest(byte[] data, int length, byte[] out, int at) {
        if (libcrypto != null) {
            libcrypto.digest(data, 0, length, out, at);
            return;
        }
        jdk.update(data, 0, length);
        try {
            jdk.digest(out, at, Sha256.DIGEST_BYTES);
        } catch (DigestException e) {
            throw new IllegalStateException("SHA-256 digest into a 32-byte range failed", e);
        }
    }

    /**
     * As {@link #digest}, for a message followed by room for its SHA-256 padding ({@code data} holds at least
     * {@link Sha256#paddedLength}{@code (length)} bytes; those after the message are overwritten): one call
     * into libcrypto instead of three.
     */
    void digestPaddingInPlace(byte[] data, int length, byte[] out, int at) {
        if (libcrypto != null) {
            libcrypto.digestPaddingInPlace(data, 0, length, out, at);
        } else {
            digest(data, length, out, at);
        }
    }
}
