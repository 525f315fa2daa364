package io.kvstore.hashing;

import io.kvstore.block.BlockHash;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
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
 * <p>Each thread keeps one digest and one encoding buffer; the extra keys of blocks that share them are
 * encoded once per prompt. Hashing a prompt allocates little beyond the resulting hashes.
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
        ExtraKeys.requireWellFormed(pythonHashSeed, "seed");
        byte[] encoded = pickle ? Pickle.dumps(pythonHashSeed) : CanonicalCbor.encode(pythonHashSeed);
        this.noneHash = SCRATCH.get().digest(sha256, encoded, encoded.length).clone();
    }

    @Override
    public HashScheme scheme() {
        return scheme;
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
        HashInputs.checkTokens(tokenIds, 0, blocks * blockSize);
        Scratch scratch = SCRATCH.get();
        Fragment common = null;
        BlockHash[] hashes = new BlockHash[blocks];
        byte[] parent = noneHash;
        for (int b = 0; b < blocks; b++) {
            int start = b * blockSize;
            Fragment fragment;
            if (perBlock.sameAsCommon(b, start, start + blockSize)) {
                if (common == null) {
                    common = fragment(perBlock.keys(b, start, start + blockSize));
                }
                fragment = common;
            } else {
                fragment = fragment(perBlock.keys(b, start, start + blockSize));
            }
            byte[] digest = pickle
                    ? scratch.pickled(sha256, parent, tokenIds, start, blockSize, fragment)
                    : scratch.cbor(sha256, parent, tokenIds, start, blockSize, fragment.bytes);
            hashes[b] = BlockHash.of(digest);
            parent = digest;
        }
        return Collections.unmodifiableList(Arrays.asList(hashes));
    }

    /**
     * One block's {@code extra_keys}, encoded once; a pickle fragment is written as it follows the parent
     * (memo 0) and the token tuple (memo 1), and the keys are kept for a pickle that needs several frames.
     */
    private record Fragment(byte[] bytes, Object keys) {}

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
        final MessageDigest sha;
        final LongTupleHashFunction xxh128 = LongTupleHashFunction.xx128();
        final long[] xxhResult = new long[2];
        final byte[] shaOut = new byte[32];
        final byte[] xxhOut = new byte[16];
        final Pickle pickler = new Pickle();
        byte[] buf = new byte[256];

        Scratch() {
            try {
                sha = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("this JDK has no SHA-256 MessageDigest", e);
            }
        }

        /**
         * The digest of {@code data[0, length)}: SHA-256, or XXH3-128 in {@code xxh3_128_digest}'s byte
         * order (big-endian high half, then low half). The array is this scratch's and valid until the
         * next call.
         */
        byte[] digest(boolean sha256, byte[] data, int length) {
            if (sha256) {
                sha.update(data, 0, length);
                try {
                    sha.digest(shaOut, 0, 32);
                } catch (DigestException e) {
                    throw new IllegalStateException("SHA-256 digest into a 32-byte array failed", e);
                }
                return shaOut;
            }
            xxh128.hashBytes(data, 0, length, xxhResult);
            putLongBe(xxhOut, 0, xxhResult[1]);
            putLongBe(xxhOut, 8, xxhResult[0]);
            return xxhOut;
        }

        /** The digest of {@code pickle.dumps((parent, tuple(tokens), extra_keys), protocol=5)}. */
        byte[] pickled(boolean sha256, byte[] parent, int[] tokens, int from, int count, Fragment extra) {
            // PROTO, FRAME header, bytes + MEMOIZE, MARK, tokens (at most 5 bytes each), TUPLE + MEMOIZE, keys,
            // TUPLE3 + MEMOIZE + STOP
            long frame = 2L + parent.length + 1 + 1 + 5L * count + 2 + extra.bytes.length + 3;
            if (frame >= Pickle.FRAME_SIZE_TARGET) {
                // a frame ends inside this pickle: write it object by object, as the C pickler does
                Pickle p = pickler.reset(false, 0);
                p.header();
                p.save(parent);
                p.saveTokenTuple(tokens, from, count);
                p.save(extra.keys);
                p.closeTuple(3);
                p.finish();
                return digest(sha256, p.buf, p.pos);
            }
            // one frame: the same bytes written straight, the frame length patched in at the end
            int need = (int) frame + 11;
            if (buf.length < need) {
                buf = new byte[Math.max(need, 2 * buf.length)];
            }
            byte[] b = buf;
            b[0] = (byte) Pickle.PROTO;
            b[1] = 5;
            b[2] = (byte) Pickle.FRAME;
            int pos = 11;
            b[pos++] = (byte) Pickle.SHORT_BINBYTES;
            b[pos++] = (byte) parent.length;
            System.arraycopy(parent, 0, b, pos, parent.length);
            pos += parent.length;
            b[pos++] = (byte) Pickle.MEMOIZE;
            if (count > 3) {
                b[pos++] = (byte) Pickle.MARK;
            }
            for (int i = from, end = from + count; i < end; i++) {
                int t = tokens[i];
                if (t <= 0xFF) {
                    b[pos] = (byte) Pickle.BININT1;
                    b[pos + 1] = (byte) t;
                    pos += 2;
                } else if (t <= 0xFFFF) {
                    b[pos] = (byte) Pickle.BININT2;
                    b[pos + 1] = (byte) t;
                    b[pos + 2] = (byte) (t >>> 8);
                    pos += 3;
                } else {
                    b[pos] = (byte) Pickle.BININT;
                    b[pos + 1] = (byte) t;
                    b[pos + 2] = (byte) (t >>> 8);
                    b[pos + 3] = (byte) (t >>> 16);
                    b[pos + 4] = (byte) (t >>> 24);
                    pos += 5;
                }
            }
            b[pos++] = (byte) (count > 3 ? Pickle.TUPLE : Pickle.TUPLE1 + count - 1);
            b[pos++] = (byte) Pickle.MEMOIZE;
            System.arraycopy(extra.bytes, 0, b, pos, extra.bytes.length);
            pos += extra.bytes.length;
            b[pos++] = (byte) (Pickle.TUPLE1 + 2);
            b[pos++] = (byte) Pickle.MEMOIZE;
            b[pos++] = (byte) Pickle.STOP;
            long length = pos - 11;
            for (int i = 0; i < 8; i++) {
                b[3 + i] = (byte) (length >>> (8 * i));
            }
            return digest(sha256, b, pos);
        }

        /** The digest of {@code cbor2.dumps((parent, tuple(tokens), extra_keys), canonical=True)}. */
        byte[] cbor(boolean sha256, byte[] parent, int[] tokens, int from, int count, byte[] extra) {
            int need = 1
                    + CanonicalCbor.headLength(parent.length)
                    + parent.length
                    + CanonicalCbor.headLength(count)
                    + 5 * count
                    + extra.length;
            if (buf.length < need) {
                buf = new byte[Math.max(need, 2 * buf.length)];
            }
            byte[] b = buf;
            b[0] = (byte) ((CanonicalCbor.ARRAY << 5) | 3);
            int pos = CanonicalCbor.writeHead(b, 1, CanonicalCbor.BYTES, parent.length);
            System.arraycopy(parent, 0, b, pos, parent.length);
            pos = CanonicalCbor.writeHead(b, pos + parent.length, CanonicalCbor.ARRAY, count);
            for (int i = from, end = from + count; i < end; i++) {
                int t = tokens[i];
                if (t < 24) {
                    b[pos++] = (byte) t;
                } else if (t <= 0xFF) {
                    b[pos] = 0x18;
                    b[pos + 1] = (byte) t;
                    pos += 2;
                } else if (t <= 0xFFFF) {
                    b[pos] = 0x19;
                    b[pos + 1] = (byte) (t >>> 8);
                    b[pos + 2] = (byte) t;
                    pos += 3;
                } else {
                    b[pos] = 0x1A;
                    b[pos + 1] = (byte) (t >>> 24);
                    b[pos + 2] = (byte) (t >>> 16);
                    b[pos + 3] = (byte) (t >>> 8);
                    b[pos + 4] = (byte) t;
                    pos += 5;
                }
            }
            System.arraycopy(extra, 0, b, pos, extra.length);
            pos += extra.length;
            return digest(sha256, b, pos);
        }

        private static void putLongBe(byte[] out, int at, long v) {
            for (int i = 7; i >= 0; i--) {
                out[at + i] = (byte) v;
                v >>>= 8;
            }
        }
    }
}
