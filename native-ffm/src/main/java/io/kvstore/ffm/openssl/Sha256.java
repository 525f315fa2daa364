package io.kvstore.ffm.openssl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.LazyBinding;
import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.NativeLibrary;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Objects;

/**
 * SHA-256 of short heap messages through OpenSSL's libcrypto, for the block hashes of vLLM's default
 * {@code sha256} scheme: one ~120-byte message per 16-token block, each chained on the previous digest.
 *
 * <p>Why not {@code java.security.MessageDigest}: the JDK's SHA-256 compresses with the same SHA-NI
 * instructions, but for a two-block message its Java side (buffering the tail, the padding as a second
 * update, the length and output conversions, the reset) costs about as much as the two compressions;
 * OpenSSL's {@code SHA256_Update}/{@code SHA256_Final} do the same in a few nanoseconds of C. The calls
 * are {@linkplain Linker.Option#critical(boolean) critical} with heap access, so the message and the
 * digest's destination are Java arrays passed without a copy. The low-level {@code SHA256_Init}/{@code
 * Update}/{@code Final} are used, not the one-shot {@code SHA256()}, which OpenSSL 3 routes through
 * {@code EVP_Q_digest} (a provider fetch per call). They are deprecated in OpenSSL 3 but exported by
 * every 1.1 and 3.x libcrypto.
 *
 * <p>{@link #digestPaddingInPlace} goes further for callers that leave room after the message: it pads
 * the message in Java (the 0x80 byte, zeros, the bit length), sets the context's eight state words to
 * SHA-256's initial values, and makes one {@code SHA256_Update} call over the padded blocks, which
 * compresses them straight from the array; the digest is then the state words, read back big-endian. One
 * call instead of three, and none of {@code SHA256_Final}'s copying of the tail. It relies on {@code
 * SHA256_CTX} starting with the eight state words ({@code h[8]}, then {@code Nl}, {@code Nh}), as every
 * OpenSSL since 0.9 declares it in {@code <openssl/sha.h>}.
 *
 * <p>Loaded on first use; {@link #availability()} says why not when libcrypto is absent or native
 * access is not enabled, and callers then keep to {@code MessageDigest}.
 */
public final class Sha256 {

    /** {@code sizeof(SHA256_CTX)}: eight state words, two length words, 16 data words, num, md_len. */
    static final long CONTEXT_BYTES = 112;

    /** Bytes in a digest. */
    public static final int DIGEST_BYTES = 32;

    private static final VarHandle INT_BE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle LONG_BE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private record Functions(MethodHandle init, MethodHandle update, MethodHandle finish) {}

    private static final LazyBinding<Functions> LIBCRYPTO = LazyBinding.of(() -> {
        NativeLibrary lib = NativeLibrary.load(
                "libcrypto",
                NativeLibrary.dirsFrom(System.getProperty("java.library.path")),
                List.of("libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"));
        Linker.Option critical = Linker.Option.critical(true);
        // int SHA256_Init(SHA256_CTX *c)
        // int SHA256_Update(SHA256_CTX *c, const void *data, size_t len)
        // int SHA256_Final(unsigned char *md, SHA256_CTX *c)
        Functions functions = new Functions(
                lib.function("SHA256_Init", FunctionDescriptor.of(JAVA_INT, ADDRESS), critical),
                lib.function("SHA256_Update", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), critical),
                lib.function("SHA256_Final", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), critical));
        return new LazyBinding.Loaded<>(functions, "libcrypto at " + lib.location());
    });

    /**
     * The handles as constants, so the JIT inlines each downcall into its caller (a handle read from an
     * instance field is called through an un-inlined {@code invokeBasic}, ~10 ns more per call).
     * Initialised on first use of {@link #digest}, which only a created, hence loaded, binding reaches.
     */
    private static final class Bound {
        static final MethodHandle INIT = LIBCRYPTO.get().init();
        static final MethodHandle UPDATE = LIBCRYPTO.get().update();
        static final MethodHandle FINAL = LIBCRYPTO.get().finish();

        private Bound() {}
    }

    /**
     * The {@code SHA256_CTX}, in a Java array that the critical calls get a pointer to like the message:
     * the state words are then set and read as array elements (OpenSSL reads the context with unaligned
     * loads, so the array's 8-byte alignment is enough). The words are in the machine's byte order, as C
     * writes them and as a Java {@code int} reads them.
     */
    private final int[] context = new int[(int) (CONTEXT_BYTES / Integer.BYTES)];

    private Sha256() {
        int ok;
        try {
            // a context is plain memory that SHA256_Final leaves nothing in to release; Init sets num and
            // md_len, which digestPaddingInPlace keeps
            ok = (int) Bound.INIT.invokeExact(MemorySegment.ofArray(context));
        } catch (Throwable t) {
            throw new IllegalStateException("libcrypto SHA256_Init failed", t);
        }
        if (ok != 1) {
            throw new IllegalStateException("libcrypto SHA256_Init returned 0");
        }
    }

    /** Sets h[8] to SHA-256's initial values and Nl = Nh = 0, as stores of constants (no copy call). */
    private static void setInitialState(int[] c) {
        c[9] = 0;
        c[0] = 0x6a09e667;
        c[1] = 0xbb67ae85;
        c[2] = 0x3c6ef372;
        c[3] = 0xa54ff53a;
        c[4] = 0x510e527f;
        c[5] = 0x9b05688c;
        c[6] = 0x1f83d9ab;
        c[7] = 0x5be0cd19;
        c[8] = 0;
    }

    /**
     * The bytes a message of {@code length} bytes takes once padded for SHA-256: the message, 0x80, zeros
     * and the 8-byte bit length, rounded up to whole 64-byte blocks.
     */
    public static int paddedLength(int length) {
        return ((length + 8) / 64 + 1) * 64;
    }

    /** Whether libcrypto's SHA-256 can be used here, with where it was loaded from, or why not. */
    public static Availability availability() {
        return LIBCRYPTO.availability();
    }

    /**
     * A hasher with its own native context, for one thread at a time.
     *
     * @throws LibraryUnavailableException when libcrypto is not available
     */
    public static Sha256 create() {
        LIBCRYPTO.get(); // throws when unavailable
        return new Sha256();
    }

    /**
     * Writes the SHA-256 of {@code data[offset, offset + length)} to {@code out[outOffset, outOffset +
     * 32)}; the two ranges may overlap (the digest is written after the message is read).
     *
     * @throws IndexOutOfBoundsException when a range lies outside its array
     */
    public void digest(byte[] data, int offset, int length, byte[] out, int outOffset) {
        MemorySegment message = MemorySegment.ofArray(data).asSlice(offset, length);
        MemorySegment digest = MemorySegment.ofArray(out).asSlice(outOffset, DIGEST_BYTES);
        MemorySegment ctx = MemorySegment.ofArray(context);
        int ok;
        try {
            ok = (int) Bound.INIT.invokeExact(ctx)
                    & (int) Bound.UPDATE.invokeExact(ctx, message, (long) length)
                    & (int) Bound.FINAL.invokeExact(digest, ctx);
        } catch (Throwable t) {
            throw new IllegalStateException("libcrypto SHA256_Init/Update/Final failed", t);
        }
        if (ok != 1) {
            throw new IllegalStateException("libcrypto SHA256_Init/Update/Final returned 0 for " + length + " bytes");
        }
    }

    /**
     * As {@link #digest}, for a message followed by room for its padding: {@code data[offset + length,
     * offset + paddedLength(length))} is overwritten with it. One call into libcrypto instead of three.
     *
     * @throws IndexOutOfBoundsException when the padded message or the digest's range lies outside its array
     */
    public void digestPaddingInPlace(byte[] data, int offset, int length, byte[] out, int outOffset) {
        int padded = paddedLength(length);
        Objects.checkFromIndexSize(offset, padded, data.length);
        Objects.checkFromIndexSize(outOffset, DIGEST_BYTES, out.length);
        int end = offset + padded;
        // zeros up to the length field in 8-byte stores (the last may reach into the field, written after),
        // never past the padded end: cheaper than a fill of 8 to 63 bytes of varying length
        for (int p = offset + length + 1; p < end - 8; p += 8) {
            LONG_BE.set(data, p, 0L);
        }
        data[offset + length] = (byte) 0x80;
        LONG_BE.set(data, end - 8, (long) length << 3);
        setInitialState(context);
        int ok;
        try {
            ok = (int) Bound.UPDATE.invokeExact(
                    MemorySegment.ofArray(context), MemorySegment.ofArray(data).asSlice(offset, padded), (long) padded);
        } catch (Throwable t) {
            throw new IllegalStateException("libcrypto SHA256_Update failed", t);
        }
        if (ok != 1) {
            throw new IllegalStateException("libcrypto SHA256_Update returned 0 for " + padded + " bytes");
        }
        for (int i = 0; i < 8; i++) {
            INT_BE.set(out, outOffset + 4 * i, context[i]);
        }
    }
}
