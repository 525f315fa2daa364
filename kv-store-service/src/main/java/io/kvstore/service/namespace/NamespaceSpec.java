package io.kvstore.service.namespace;

import io.kvstore.hashing.BlockHasher;
import io.kvstore.hashing.HashScheme;

/**
 * What a namespace holds: one model's KV blocks in one layout, keyed by one hash scheme. Every block
 * stored in it has exactly {@link #blockBytes()} bytes, so a mismatched engine is refused on its first
 * store instead of corrupting another's cache.
 *
 * @param model the model name, informational (it is also part of the namespace's identity for operators)
 * @param layers, kvHeads, headDim, dtype, blockSize the KV layout; a block holds K and V of
 *     {@code blockSize} tokens for every layer
 * @param hashScheme {@code sha256_cbor} (vLLM) or {@code xxh3} (Dynamo KVBM)
 * @param hashSeed vLLM's {@code PYTHONHASHSEED} for {@code sha256_cbor}; for {@code xxh3} absent (the salt hash
 *     is derived per request from LoRA name and cache salt, as Dynamo KVBM does) or a fixed 64-bit salt hash
 */
public record NamespaceSpec(
        String model,
        int layers,
        int kvHeads,
        int headDim,
        Dtype dtype,
        int blockSize,
        HashScheme hashScheme,
        String hashSeed) {

    /** The largest block accepted: a slab of the default configuration. */
    public static final long MAX_BLOCK_BYTES = 32L << 20;

    public NamespaceSpec {
        require(model != null && !model.isBlank(), "model", "is required");
        require(layers > 0 && layers <= 4096, "layout.layers", "must be 1 to 4096, got " + layers);
        require(kvHeads > 0 && kvHeads <= 4096, "layout.kvHeads", "must be 1 to 4096, got " + kvHeads);
        require(headDim > 0 && headDim <= 65536, "layout.headDim", "must be 1 to 65536, got " + headDim);
        require(dtype != null, "layout.dtype", "is required");
        require(blockSize > 0 && blockSize <= 65536, "layout.blockSize", "must be 1 to 65536, got " + blockSize);
        require(hashScheme != null, "hashScheme", "is required");
        require(
                hashScheme != HashScheme.SHA256_CBOR || (hashSeed != null && !hashSeed.isEmpty()),
                "hashSeed",
                "is required for sha256_cbor (vLLM's PYTHONHASHSEED; a random seed makes hashes useless across processes)");
        if (hashScheme != null) {
            try {
                BlockHasher.create(hashScheme, hashSeed);
            } catch (IllegalArgumentException e) {
                throw new InvalidNamespaceException("hashSeed", "hashSeed: " + e.getMessage());
            }
        }
        long bytes = 2L * layers * kvHeads * headDim * dtype.bytes() * blockSize;
        require(
                bytes <= MAX_BLOCK_BYTES,
                "layout",
                "gives blocks of " + bytes + " bytes; at most " + MAX_BLOCK_BYTES + " are supported");
    }

    private static void require(boolean ok, String field, String message) {
        if (!ok) {
            throw new InvalidNamespaceException(field, field + " " + message);
        }
    }

    /** 2 (K and V) x layers x kv heads x head dim x dtype bytes x block tokens. */
    public int blockBytes() {
        return (int) (2L * layers * kvHeads * headDim * dtype.bytes() * blockSize);
    }

    /** Hash length in bytes: 32 for sha256_cbor, 8 for xxh3. */
    public int hashBytes() {
        return hashScheme == HashScheme.SHA256_CBOR ? 32 : 8;
    }

    public BlockHasher hasher() {
        return BlockHasher.create(hashScheme, hashSeed);
    }
}
