package io.kvstore.hashing;

import io.kvstore.block.BlockHash;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * vLLM's prefix-cache block hash ({@code --prefix-caching-hash-algo sha256_cbor}): each block's
 * hash is the SHA-256 of the canonical CBOR encoding of {@code (parent, token_ids, extra_keys)}.
 *
 * <p>What vLLM does, read from {@code vllm/v1/core/kv_cache_utils.py} and
 * {@code vllm/utils/hashing.py}, and reproduced here byte for byte:
 * <ul>
 *   <li>{@code sha256_cbor(x) = sha256(cbor2.dumps(x, canonical=True))}.</li>
 *   <li>{@code init_none_hash}: {@code NONE_HASH = sha256_cbor(os.getenv("PYTHONHASHSEED"))}, the
 *       seed as a <em>string</em> ({@code "0"} encodes as {@code 61 30}); without the variable vLLM
 *       draws 32 random bytes, so no two processes share blocks; hence the seed is required here.</li>
 *   <li>{@code hash_block_tokens}: the parent is the previous block's 32 digest bytes (a CBOR byte
 *       string, {@code 58 20 ...}), or {@code NONE_HASH} for the first block; the tokens are a
 *       tuple, i.e. a CBOR array of unsigned integers in their shortest form (ids up to
 *       2<sup>31</sup>-1 take at most 5 bytes, {@code 1a xx xx xx xx}).</li>
 *   <li>{@code generate_block_hash_extra_keys}: {@code None} (CBOR {@code f6}) when a block has
 *       no extra keys, else a tuple of the LoRA name (every block), the multimodal keys (here
 *       {@link ExtraKeys#more()}, on every block), then the cache salt (first block only, and
 *       only when non-empty, as vLLM tests its truthiness).</li>
 *   <li>{@code request_block_hasher}: only full blocks are hashed.</li>
 * </ul>
 *
 * <p>Each thread keeps one {@link MessageDigest} and one encoding buffer, so hashing a prompt
 * allocates only the resulting hashes.
 */
public final class Sha256CborHasher implements BlockHasher {

    private static final int DIGEST_LENGTH = 32;
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final byte[] noneHash;

    /**
     * @param pythonHashSeed the engine's {@code PYTHONHASHSEED}, e.g. {@code "0"}
     * @throws IllegalArgumentException if the seed is null or blank
     */
    public Sha256CborHasher(String pythonHashSeed) {
        if (pythonHashSeed == null || pythonHashSeed.isBlank()) {
            throw new IllegalArgumentException("sha256_cbor needs the engine's PYTHONHASHSEED as seed, got '"
                    + pythonHashSeed + "' (without it vLLM draws a random NONE_HASH and no block is ever shared)");
        }
        byte[] seed = CanonicalCbor.encode(pythonHashSeed);
        Scratch scratch = SCRATCH.get();
        scratch.digest.update(seed);
        this.noneHash = scratch.digest.digest();
    }

    @Override
    public HashScheme scheme() {
        return HashScheme.SHA256_CBOR;
    }

    /** vLLM's {@code NONE_HASH} for this seed: the parent of every prompt's first block. */
    public BlockHash noneHash() {
        return BlockHash.of(noneHash);
    }

    @Override
    public List<BlockHash> hashPrompt(int[] tokenIds, int blockSize, ExtraKeys extra) {
        HashInputs.checkBlockSize(blockSize);
        int blocks = tokenIds.length / blockSize;
        if (blocks == 0) {
            return List.of();
        }
        HashInputs.checkTokens(tokenIds, 0, blocks * blockSize);
        byte[] firstExtra = extraKeys(extra, true);
        byte[] laterExtra = extraKeys(extra, false);
        Scratch scratch = SCRATCH.get();
        BlockHash[] hashes = new BlockHash[blocks];
        byte[] parent = noneHash;
        for (int b = 0; b < blocks; b++) {
            parent = scratch.hash(parent, tokenIds, b * blockSize, blockSize, b == 0 ? firstExtra : laterExtra);
            hashes[b] = BlockHash.of(parent);
        }
        return Collections.unmodifiableList(Arrays.asList(hashes));
    }

    @Override
    public BlockHash hashBlock(BlockHash parent, int[] tokenIds, int from, int to, ExtraKeys extra) {
        HashInputs.checkTokens(tokenIds, from, to);
        byte[] parentBytes = parent == null ? noneHash : parent.toBytes();
        byte[] extraBytes = extraKeys(extra, parent == null);
        return BlockHash.of(SCRATCH.get().hash(parentBytes, tokenIds, from, to - from, extraBytes));
    }

    /** The encoded {@code extra_keys} element of a block: null or a tuple, in vLLM's order. */
    private static byte[] extraKeys(ExtraKeys extra, boolean firstBlock) {
        if (extra == null) {
            return new byte[] {CanonicalCbor.NULL};
        }
        List<Object> keys = new ArrayList<>(extra.more().size() + 2);
        if (extra.loraName() != null) {
            keys.add(extra.loraName());
        }
        keys.addAll(extra.more());
        if (firstBlock && extra.cacheSalt() != null && !extra.cacheSalt().isEmpty()) {
            keys.add(extra.cacheSalt());
        }
        return CanonicalCbor.encode(keys.isEmpty() ? null : keys);
    }

    /** One thread's digest and encoding buffer. */
    private static final class Scratch {
        final MessageDigest digest;
        final byte[] out = new byte[DIGEST_LENGTH];
        byte[] buf = new byte[256];

        Scratch() {
            try {
                digest = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("this JDK has no SHA-256 MessageDigest", e);
            }
        }

        /**
         * SHA-256 of {@code [parent, [tokens...], extra]}; returns this scratch's digest array, valid
         * until the next call (which may take it as its parent: it is copied before being overwritten).
         */
        byte[] hash(byte[] parent, int[] tokens, int from, int count, byte[] extra) {
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
            digest.update(b, 0, pos);
            try {
                digest.digest(out, 0, DIGEST_LENGTH);
            } catch (DigestException e) {
                throw new IllegalStateException("SHA-256 digest into a 32-byte array failed", e);
            }
            return out;
        }
    }
}
