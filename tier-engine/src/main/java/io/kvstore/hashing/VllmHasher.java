package io.kvstore.hashing;

import io.kvstore.block.BlockHash;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import net.openhft.hashing.LongTupleHashFunction;

/**
 * vLLM's prefix-cache block hash, for each of its {@code --prefix-caching-hash-algo} choices: {@code
 * sha256} (the default), {@code sha256_cbor}, {@code xxhash} and {@code xxhash_cbor}.
 *
 * <p>What vLLM does, read from {@code vllm/v1/core/kv_cache_utils.py} and {@code vllm/utils/hashing.py},
 * and reproduced here byte for byte:
 * <ul>
 *   <li>The hash function is a serialisation followed by a digest: {@code pickle.dumps(x,
 *       protocol=5)} ({@link Pickle}) or {@code cbor2.dumps(x, canonical=True)} ({@link CanonicalCbor}),
 *       then SHA-256 (32 bytes) or {@code xxhash.xxh3_128_digest} (16 bytes, the high half first).
 *   <li>{@code init_none_hash}: {@code NONE_HASH = hash_fn(os.getenv("PYTHONHASHSEED"))}, the seed as a
 *       <em>string</em>; {@code ""} is a seed like any other. Without the variable vLLM draws 32 random
 *       bytes and no two processes share blocks, hence the seed is required here.
 *   <li>{@code hash_block_tokens}: {@code hash_fn((parent or NONE_HASH, tuple(block_tokens),
 *       extra_keys))}, the parent being the previous block's digest bytes.
 *   <li>{@code extra_keys} as {@link VllmBlockKeys} builds them, {@code None} when a block has none.
 *   <li>{@code request_block_hasher}: only full blocks are hashed.
 * </ul>
 *
 * <p>Speed: each thread keeps one digest (SHA-256 through OpenSSL's libcrypto where it loads, {@link
 * Sha256Digester}) and one encoding buffer. A block's message is written straight
 * into the buffer (token ids without a branch on their size), its digest is written where the next
 * block's message needs its parent, and copied once into the block's {@link BlockHash}; the extra keys of
 * blocks that share them are encoded once per prompt. Hashing a prompt allocates the resulting hashes and
 * little else.
 */
public final class VllmHasher implements BlockHasher {

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final HashScheme scheme;
    private final boolean pickle;
    private final boolean sha256;
    private final byte[] noneHash;

    /**
     * @param scheme one of the four vLLM schemes
     * @param pythonHashSeed the engine's {@code PYTHONHASHSEED}, e.g. {@code "0"}; {@code ""} is valid
     * @throws HashInputException (field {@code seed}) if the seed is null
     */
    public VllmHasher(HashScheme scheme, String pythonHashSeed) {
        this.scheme = scheme;
        this.pickle = switch (scheme) {
            case SHA256, XXHASH -> true;
            case SHA256_CBOR, XXHASH_CBOR -> false;
            default -> throw new IllegalArgumentException(scheme + " is not a vLLM scheme");
        };
        this.sha256 = scheme == HashScheme.SHA256 || scheme == HashScheme.SHA256_CBOR;
        if (pythonHashSeed == null) {
            throw new HashInputException(
                    "seed",
                    scheme + " needs the engine's PYTHONHASHSEED as seed (\"\" when it is set but empty); without it"
                            + " vLLM draws a random NONE_HASH and no block is ever shared");
        }
        requirePythonHashSeed(scheme, pythonHashSeed);
        byte[] encoded = pickle ? Pickle.dumps(pythonHashSeed) : CanonicalCbor.encode(pythonHashSeed);
        this.noneHash = SCRATCH.get().digest(sha256, encoded, encoded.length).clone();
    }

    /**
     * Refuses a seed no vLLM can run with: CPython refuses to start unless {@code PYTHONHASHSEED} is
     * {@code random} or an integer in [0, 4294967295] (an empty value counts as unset, and vLLM then
     * hashes {@code ""}). This also catches a JSON {@code true} or {@code 1.5} that the service's JSON
     * reader turned into a string.
     */
    private static void requirePythonHashSeed(HashScheme scheme, String seed) {
        if (seed.isEmpty() || seed.equals("random")) {
            return;
        }
        String digits = seed.stripLeading(); // as strtoul, which Python uses, skips leading blanks
        digits = digits.startsWith("+") ? digits.substring(1) : digits;
        boolean decimal =
                !digits.isEmpty() && digits.length() <= 10 && digits.chars().allMatch(c -> c >= '0' && c <= '9');
        if (!decimal || Long.parseLong(digits) > 0xFFFF_FFFFL) {
            throw new HashInputException(
                    "seed",
                    scheme + " takes the engine's PYTHONHASHSEED: 'random', an integer in [0, 4294967295] or empty"
                            + " (Python refuses to start with anything else), got '" + seed + "'");
        }
    }

    @Override
    public HashScheme scheme() {
        return scheme;
    }

    /** Which SHA-256 the {@code sha256} schemes use here (libcrypto, or the JDK's and why), for the start-up log. */
    public static String sha256Implementation() {
        return Sha256Digester.describe();
    }

    /** vLLM's {@code NONE_HASH} for this seed: the parent of every prompt's first block. */
    public BlockHash noneHash() {
        return BlockHash.of(noneHash);
    }

    @Override
    public List<BlockHash> hashPrompt(int[] tokenIds, int blockSize, ExtraKeys extra) {
        HashInputs.checkBlockSize(blockSize);
        ExtraKeys keys = extra == null ? ExtraKeys.NONE : extra;
        int blocks = tokenIds.length / blockSize;
        VllmBlockKeys perBlock = new VllmBlockKeys(keys, tokenIds.length, blocks);
        if (blocks == 0) {
            return List.of();
        }
        Scratch scratch = SCRATCH.get();
        BlockHash[] hashes = new BlockHash[blocks];
        Prompt prompt = new Prompt(sha256, noneHash, tokenIds, blockSize, blocks, perBlock, new Fragments(), hashes);
        if (pickle) {
            scratch.pickledPrompt(prompt);
        } else {
            scratch.cborPrompt(prompt);
        }
        return Collections.unmodifiableList(Arrays.asList(hashes));
    }

    /**
     * One prompt's hashing job: the digest ({@code sha256} or XXH3-128), the first block's parent, the
     * token ids, the number of full blocks, their extra keys, and where each block's hash goes.
     */
    private record Prompt(
            boolean sha256,
            byte[] noneHash,
            int[] tokens,
            int blockSize,
            int blocks,
            VllmBlockKeys perBlock,
            Fragments fragments,
            BlockHash[] out) {}

    /**
     * One block's {@code extra_keys}, encoded once; a pickle fragment is written as it follows the parent
     * (memo 0) and the token tuple (memo 1), and the keys are kept for a pickle that needs several frames.
     */
    private record Fragment(byte[] bytes, Object keys) {}

    /** The fragments of one prompt's blocks; blocks that share the prompt's common keys share one. */
    private final class Fragments {
        private Fragment common;

        /** The fragment of block {@code index}, {@code [start, end)}; blocks are asked for in order. */
        Fragment of(VllmBlockKeys perBlock, int index, int start, int end) {
            if (perBlock.sameAsCommon(index, start, end)) {
                if (common == null) {
                    common = fragment(perBlock.keys(index, start, end));
                }
                return common;
            }
            return fragment(perBlock.keys(index, start, end));
        }
    }

    private Fragment fragment(List<Object> keys) {
        if (!pickle) {
            return new Fragment(CanonicalCbor.encode(keys), keys);
        }
        Pickle p = new Pickle().reset(false, 2);
        p.save(keys);
        return new Fragment(p.toBytes(), keys);
    }

    /** One thread's digests and encoding buffers. */
    private static final class Scratch {
        /** Where a one-frame pickle's frame length and its parent's bytes are. */
        static final int FRAME_AT = 3;

        static final int PARENT_AT = FRAME_AT + 8 + 2;
        /** By an id's significant bytes less one (0 to 3), 16 bits each: the C pickler's opcode, its length. */
        static final long INT_FORMS = (Pickle.BININT1 | 2L << 8)
                | (Pickle.BININT2 | 3L << 8) << 16
                | (Pickle.BININT | 5L << 8) << 32
                | (Pickle.BININT | 5L << 8) << 48;
        /** The argument bytes after a CBOR unsigned integer's head, by size class 0 to 3. */
        static final long CBOR_ARG_BYTES = 0L | 1L << 8 | 2L << 16 | 4L << 24;

        static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
        static final VarHandle LONG_BE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

        final Sha256Digester sha = Sha256Digester.create();
        final LongTupleHashFunction xxh128 = LongTupleHashFunction.xx128();
        final long[] xxhResult = new long[2];
        final byte[] shaOut = new byte[32];
        final byte[] xxhOut = new byte[16];
        final Pickle pickler = new Pickle();
        /** Bytes past a message that SHA-256's padding may take: 0x80, up to 63 zeros, the 8-byte length. */
        static final int PADDING_ROOM = 72;

        byte[] buf = new byte[256];

        /**
         * The digest of {@code data[0, length)}: SHA-256, or XXH3-128 in {@code xxh3_128_digest}'s byte
         * order (big-endian high half, then low half). The array is this scratch's and valid until the
         * next call.
         */
        byte[] digest(boolean sha256, byte[] data, int length) {
            byte[] out = sha256 ? shaOut : xxhOut;
            digestInto(sha256, data, length, out, 0);
            return out;
        }

        /** Writes the digest of {@code data[0, length)} to {@code out[at, at + 32 or 16)}. */
        void digestInto(boolean sha256, byte[] data, int length, byte[] out, int at) {
            if (sha256) {
                sha.digest(data, length, out, at);
            } else {
                xxh128(data, length, out, at);
            }
        }

        /**
         * As {@link #digestInto}, for this scratch's buffer, which holds {@link #PADDING_ROOM} bytes past
         * the message: SHA-256 pads the message there, in one call into libcrypto.
         */
        void digestBufInto(boolean sha256, int length, int at) {
            if (sha256) {
                sha.digestPaddingInPlace(buf, length, buf, at);
            } else {
                xxh128(buf, length, buf, at);
            }
        }

        /** XXH3-128 in {@code xxh3_128_digest}'s byte order: the high half big-endian, then the low half. */
        private void xxh128(byte[] data, int length, byte[] out, int at) {
            xxh128.hashBytes(data, 0, length, xxhResult);
            LONG_BE.set(out, at, xxhResult[1]);
            LONG_BE.set(out, at + 8, xxhResult[0]);
        }

        /**
         * Hashes the blocks of a prompt with the pickle schemes: each block's {@code
         * pickle.dumps((parent, tuple(tokens), extra_keys), protocol=5)} is written straight into this
         * scratch's buffer and digested there. The message starts with the same 13 bytes every time
         * ({@code PROTO 5}, the {@code FRAME} opcode and its length, {@code SHORT_BINBYTES} and the
         * parent's length), so only the frame length is patched per block; each digest is written
         * into the parent's place, where the next block needs it, and copied once into its result.
         */
        void pickledPrompt(Prompt prompt) {
            int[] tokens = prompt.tokens();
            int blockSize = prompt.blockSize();
            byte[] noneHash = prompt.noneHash();
            BlockHash[] out = prompt.out();
            int hashLength = noneHash.length;
            boolean primed = false; // whether buf holds the constant header and the parent
            for (int b = 0; b < prompt.blocks(); b++) {
                int start = b * blockSize;
                Fragment extra = prompt.fragments().of(prompt.perBlock(), b, start, start + blockSize);
                // PROTO, FRAME header, bytes + MEMOIZE, MARK, tokens (at most 5 bytes each), TUPLE + MEMOIZE,
                // keys, TUPLE3 + MEMOIZE + STOP
                long frame = 2L + hashLength + 1 + 1 + 5L * blockSize + 2 + extra.bytes.length + 3;
                if (frame >= Pickle.FRAME_SIZE_TARGET) {
                    // a frame ends inside this pickle: write it object by object, as the C pickler does
                    HashInputs.checkTokens(tokens, start, start + blockSize);
                    Pickle p = pickler.reset(false, 0);
                    p.header();
                    p.save(b == 0 ? noneHash : out[b - 1].toBytes());
                    p.saveTokenTuple(tokens, start, blockSize);
                    p.save(extra.keys);
                    p.closeTuple(3);
                    p.finish();
                    out[b] = BlockHash.of(digest(prompt.sha256(), p.buf, p.pos));
                    primed = false;
                    continue;
                }
                // one frame, then room for the digest's padding (which also covers a token's 8-byte store
                // running up to 6 bytes past the last one)
                int need = (int) frame + FRAME_AT + 8 + PADDING_ROOM;
                if (buf.length < need) {
                    buf = new byte[Math.max(need, 2 * buf.length)];
                    primed = false;
                }
                if (!primed) {
                    buf[0] = (byte) Pickle.PROTO;
                    buf[1] = 5;
                    buf[2] = (byte) Pickle.FRAME;
                    buf[PARENT_AT - 2] = (byte) Pickle.SHORT_BINBYTES;
                    buf[PARENT_AT - 1] = (byte) hashLength;
                    System.arraycopy(b == 0 ? noneHash : out[b - 1].toBytes(), 0, buf, PARENT_AT, hashLength);
                    primed = true;
                }
                int end = pickleBody(buf, PARENT_AT + hashLength, tokens, start, blockSize, extra.bytes);
                LONG_LE.set(buf, FRAME_AT, (long) (end - (FRAME_AT + 8)));
                // the digest takes the parent's place, where the next block needs it
                digestBufInto(prompt.sha256(), end, PARENT_AT);
                out[b] = BlockHash.of(buf, PARENT_AT, hashLength);
            }
        }

        /**
         * Writes, from {@code pos}: the parent's {@code MEMOIZE}, the token tuple, the extra keys, {@code
         * TUPLE3 MEMOIZE STOP}; returns the end. A negative token id is refused (after the block is written,
         * so the loop has no branch for it). Each id is written as the C pickler does ({@code BININT1} below
         * 256, {@code BININT2} below 65536, else {@code BININT}) without a branch on its size: the opcode and
         * all four little-endian bytes are one 8-byte store and the position advances by the opcode's length,
         * so the next token overwrites the bytes not used.
         */
        private static int pickleBody(byte[] b, int pos, int[] tokens, int from, int count, byte[] extra) {
            b[pos++] = (byte) Pickle.MEMOIZE;
            if (count > 3) {
                b[pos++] = (byte) Pickle.MARK;
            }
            int all = 0;
            for (int i = from, end = from + count; i < end; i++) {
                int t = tokens[i];
                all |= t;
                // the id's significant bytes less one (0 to 3) pick its opcode and length from one constant
                int form = (31 - Integer.numberOfLeadingZeros(t | 1)) >>> 3;
                long opcodeAndLength = INT_FORMS >>> (form << 4);
                LONG_LE.set(b, pos, (opcodeAndLength & 0xFF) | (t & 0xFFFF_FFFFL) << 8); // opcode and id in one store
                pos += (int) (opcodeAndLength >>> 8) & 0xFF;
            }
            if (all < 0) {
                HashInputs.checkTokens(tokens, from, from + count); // throws, naming the negative id
            }
            b[pos++] = (byte) (count > 3 ? Pickle.TUPLE : Pickle.TUPLE1 + count - 1);
            b[pos++] = (byte) Pickle.MEMOIZE;
            if (extra.length == 1) {
                b[pos] = extra[0]; // None, the usual keys: no call into the copy stub for one byte
            } else {
                System.arraycopy(extra, 0, b, pos, extra.length);
            }
            pos += extra.length;
            b[pos++] = (byte) (Pickle.TUPLE1 + 2);
            b[pos++] = (byte) Pickle.MEMOIZE;
            b[pos++] = (byte) Pickle.STOP;
            return pos;
        }

        /**
         * Hashes the blocks of a prompt with the CBOR schemes: each block's {@code
         * cbor2.dumps((parent, tuple(tokens), extra_keys), canonical=True)} is written into this scratch's
         * buffer and digested there, the digest taking the parent's place for the next block as in {@link
         * #pickledPrompt}; the array and byte-string heads before the parent never change.
         */
        void cborPrompt(Prompt prompt) {
            int blockSize = prompt.blockSize();
            BlockHash[] out = prompt.out();
            int hashLength = prompt.noneHash().length;
            int parentAt = CanonicalCbor.writeHead(buf, 1, CanonicalCbor.BYTES, hashLength);
            int tokensAt = parentAt + hashLength;
            for (int b = 0; b < prompt.blocks(); b++) {
                int start = b * blockSize;
                byte[] extra = prompt.fragments().of(prompt.perBlock(), b, start, start + blockSize).bytes;
                // room for the digest's padding, which also covers a token's 8-byte store running 7 bytes past
                int need = tokensAt + CanonicalCbor.headLength(blockSize) + 5 * blockSize + extra.length + PADDING_ROOM;
                if (buf.length < need || b == 0) {
                    byte[] parent = b == 0 ? prompt.noneHash() : out[b - 1].toBytes();
                    if (buf.length < need) {
                        buf = new byte[Math.max(need, 2 * buf.length)];
                    }
                    buf[0] = (byte) ((CanonicalCbor.ARRAY << 5) | 3);
                    CanonicalCbor.writeHead(buf, 1, CanonicalCbor.BYTES, hashLength);
                    System.arraycopy(parent, 0, buf, parentAt, hashLength);
                }
                int pos = CanonicalCbor.writeHead(buf, tokensAt, CanonicalCbor.ARRAY, blockSize);
                pos = cborTokens(buf, pos, prompt.tokens(), start, blockSize);
                System.arraycopy(extra, 0, buf, pos, extra.length);
                pos += extra.length;
                digestBufInto(prompt.sha256(), pos, parentAt);
                out[b] = BlockHash.of(buf, parentAt, hashLength);
            }
        }

        /**
         * Writes the token ids as canonical CBOR unsigned integers (the value itself below 24, else a
         * 1, 2 or 4-byte big-endian argument after 0x18, 0x19 or 0x1A) without a branch on their size: the
         * head and argument are built in the top bytes of a long, stored whole, and the position advances
         * by their length. Returns the end.
         */
        private static int cborTokens(byte[] b, int pos, int[] tokens, int from, int count) {
            int all = 0;
            for (int i = from, end = from + count; i < end; i++) {
                int t = tokens[i];
                all |= t;
                // 0 to 3: whether t >= 24, > 0xFF, > 0xFFFF
                int size = ((23 - t) >>> 31) + ((-(t >>> 8)) >>> 31) + ((-(t >>> 16)) >>> 31);
                int argBytes = (int) (CBOR_ARG_BYTES >>> (size << 3)) & 0xFF; // 0, 1, 2, 4
                long head = size == 0 ? t : 0x17 + size; // 0x18, 0x19, 0x1A
                long item = (head << (argBytes << 3)) | (t & ((1L << (argBytes << 3)) - 1));
                // 1 + argBytes bytes, left-aligned in the long
                LONG_BE.set(b, pos, item << (56 - (argBytes << 3)));
                pos += 1 + argBytes;
            }
            if (all < 0) {
                HashInputs.checkTokens(tokens, from, from + count); // throws, naming the negative id
            }
            return pos;
        }
    }
}
