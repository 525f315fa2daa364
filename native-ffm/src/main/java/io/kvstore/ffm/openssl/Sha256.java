package io.kvstore.ffm.openssl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.LazyBinding;
import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.List;

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
 * <p>Loaded on first use; {@link #availability()} says why not when libcrypto is absent or native
 * access is not enabled, and callers then keep to {@code MessageDigest}.
 */
public final class Sha256 {

    /** {@code sizeof(SHA256_CTX)}: eight state words, two length words, 16 data words, num, md_len. */
    static final long CONTEXT_BYTES = 112;

    /** Bytes in a digest. */
    public static final int DIGEST_BYTES = 32;

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

    private final MemorySegment context;

    private Sha256() {
        // freed with this object; a context is plain memory, SHA256_Final leaves nothing to release
        this.context = Arena.ofAuto().allocate(CONTEXT_BYTES, 16);
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
        int ok;
        try {
            ok = (int) Bound.INIT.invokeExact(context)
                    & (int) Bound.UPDATE.invokeExact(context, message, (long) length)
                    & (int) Bound.FINAL.invokeExact(digest, context);
        } catch (Throwable t) {
            throw new IllegalStateException("libcrypto SHA256_Init/Update/Final failed", t);
        }
        if (ok != 1) {
            throw new IllegalStateException("libcrypto SHA256_Init/Update/Final returned 0 for " + length + " bytes");
        }
    }
}
