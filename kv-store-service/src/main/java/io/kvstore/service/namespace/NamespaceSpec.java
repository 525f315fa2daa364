package io.kvstore.service.namespace;

import io.kvstore.hashing.BlockHasher;
import io.kvstore.hashing.HashInputException;
import io.kvstore.hashing.HashScheme;

/**
 * What a namespace holds: one model's KV blocks in one layout, keyed by one hash scheme. Every block
 * stored in it has exactly {@link #blockBytes()} bytes, so a mismatched engine is refused on its first
 * store instead of corrupting another's cache.
 *
 * @param model the model name, informational (it is also part of the namespace's identity for operators)
 * @param layers, kvHeads, headDim, dtype, blockSize the KV layout; a block holds K and V of
 *     {@code blockSize} tokens for every layer
 * @param hashScheme how the engine hashes blocks: {@code vllm:sha256}, {@code vllm:sha256_cbor}, {@code vllm:xxhash},
 *     {@code vllm:xxhash_cbor}, {@code dynamo:kvbm_v1} or {@code dynamo:router} (see {@link HashScheme})
 * @param hashSeed for the {@code vllm:*} schemes the engine's {@code PYTHONHASHSEED} (required; {@code ""} is a
 *     valid seed); for the {@code dynamo:*} schemes absent (the salt hash is derived per request from LoRA name
 *     and cache salt, as Dynamo does) or a fixed 64-bit salt hash
 * @param writeThrough {@code "durability": "write-through"}: every store reaches the durable (NVMe) tier before
 *     it is acknowledged; otherwise write-back (blocks reach NVMe when demoted)
 * @param lora the LoRA adapter whose KV the namespace holds (the name the engine hashed into every block), or
 *     null; KV events carry it as {@code lora_name}
 * @param extraKeys further keys the engine hashed into every block (a cache salt, say), or null; KV events
 *     carry the LoRA name and these as the block's {@code extra_keys} entry
 */
public record NamespaceSpec(
        String model,
        int layers,
        int kvHeads,
        int headDim,
        Dtype dtype,
        int blockSize,
        HashScheme hashScheme,
        String hashSeed,
        boolean writeThrough,
        String lora,
        java.util.List<String> extraKeys) {

    /** Most {@code extraKeys}, and most characters in one of them or in {@code lora}. */
    static final int MAX_EXTRA_KEYS = 16;

    static final int MAX_KEY_CHARS = 256;

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
                hashScheme == null || !hashScheme.isVllm() || hashSeed != null,
                "hashSeed",
                "is required for " + hashScheme + " (vLLM's PYTHONHASHSEED, \"\" when set but empty; without it vLLM"
                        + " draws a random seed and no hash is ever shared across processes)");
        if (hashScheme != null) {
            try {
                BlockHasher.create(hashScheme, hashSeed);
            } catch (HashInputException e) {
                throw new InvalidNamespaceException("hashSeed", "hashSeed: " + e.reason());
            }
        }
        require(
                lora == null || lora.length() <= MAX_KEY_CHARS,
                "lora",
                "must have at most " + MAX_KEY_CHARS + " characters");
        if (extraKeys != null) {
            require(extraKeys.size() <= MAX_EXTRA_KEYS, "extraKeys", "must list at most " + MAX_EXTRA_KEYS + " keys");
            for (int i = 0; i < extraKeys.size(); i++) {
                String k = extraKeys.get(i);
                require(
                        k != null && k.length() <= MAX_KEY_CHARS,
                        "extraKeys[" + i + "]",
                        "must be a string of at most " + MAX_KEY_CHARS + " characters");
            }
            extraKeys = java.util.List.copyOf(extraKeys);
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

    /** Hash length in bytes: 32 for the SHA-256 schemes, 16 for vLLM's xxhash ones, 8 for Dynamo's. */
    public int hashBytes() {
        return hashScheme.hashLength();
    }

    public BlockHasher hasher() {
        return BlockHasher.create(hashScheme, hashSeed);
    }
}
