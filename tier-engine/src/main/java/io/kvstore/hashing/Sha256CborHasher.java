package io.kvstore.hashing;

import io.kvstore.catalog.BlockHash;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * vLLM's {@code sha256_cbor} block hash: {@code sha256(cbor2.dumps((parent, tuple(token_ids), extra_keys),
 * canonical=True))}, where the first block's parent is {@code NONE_HASH = sha256_cbor(seed)} and
 * {@code extra_keys} is a tuple or None (vllm/v1/core/kv_cache_utils.py: {@code hash_block_tokens},
 * {@code init_none_hash}, {@code generate_block_hash_extra_keys}). An engine running vLLM with
 * {@code PYTHONHASHSEED=<seed>} computes the same 32-byte hashes.
 */
public final class Sha256CborHasher implements BlockHasher {

    private static final ThreadLocal<MessageDigest> SHA256 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    });

    private final byte[] noneHash;

    public Sha256CborHasher(String seed) {
        if (seed == null) {
            throw new IllegalArgumentException("sha256_cbor needs a seed (vLLM's PYTHONHASHSEED), e.g. \"0\"");
        }
        this.noneHash = SHA256.get().digest(new CanonicalCbor(16).text(seed).toByteArray());
    }

    @Override
    public HashScheme scheme() {
        return HashScheme.SHA256_CBOR;
    }

    /** NONE_HASH: the parent of every first block. */
    public BlockHash noneHash() {
        return BlockHash.of(noneHash);
    }

    @Override
    public BlockHash hashBlock(BlockHash parent, int[] tokenIds, int from, int to, int blockIndex, ExtraKeys extra) {
        List<Object> keys = extra.forBlock(blockIndex);
        CanonicalCbor cbor = new CanonicalCbor(48 + 5 * (to - from));
        cbor.array(3);
        cbor.bytes(parent == null ? noneHash : parent.toBytes());
        cbor.array(to - from);
        for (int i = from; i < to; i++) {
            cbor.integer(tokenIds[i]);
        }
        cbor.value(keys);
        return BlockHash.of(SHA256.get().digest(cbor.toByteArray()));
    }
}
