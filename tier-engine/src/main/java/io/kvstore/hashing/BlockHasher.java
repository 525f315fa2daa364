package io.kvstore.hashing;

import io.kvstore.block.BlockHash;
import java.util.List;

/**
 * Computes the chained hashes that identify blocks of tokens, exactly as the engine that owns a
 * namespace computes them, so a prefix stored by one engine is found by the next. One
 * implementation per engine family ({@link VllmHasher}, {@link Xxh3Hasher}); instances are immutable
 * and safe to share between threads.
 *
 * <p>Only full blocks are hashed: a trailing partial block has no key. Token ids are non-negative
 * {@code int}s (vLLM's and Dynamo's vocabularies fit well below 2<sup>31</sup>). A null
 * {@link ExtraKeys} means {@link ExtraKeys#NONE}.
 */
public sealed interface BlockHasher permits VllmHasher, Xxh3Hasher {

    /**
     * The hasher a namespace configured with {@code scheme} and {@code seed} uses.
     *
     * @param seed for the {@code vllm:*} schemes the engine's {@code PYTHONHASHSEED} (required; {@code
     *     ""} is valid); for the {@code dynamo:*} schemes null to derive the seed per request from its
     *     LoRA name and cache salt as Dynamo does, or a fixed 64-bit seed (unsigned decimal or {@code
     *     0x} hex) for every request
     * @throws HashInputException (field {@code seed}) naming the scheme and what is wrong with the seed
     */
    static BlockHasher create(HashScheme scheme, String seed) {
        return switch (scheme) {
            case SHA256, SHA256_CBOR, XXHASH, XXHASH_CBOR -> new VllmHasher(scheme, seed);
            case KVBM_V1, DYNAMO_ROUTER ->
                seed == null ? new Xxh3Hasher(scheme) : new Xxh3Hasher(scheme, Xxh3Hasher.parseSeed(scheme, seed));
        };
    }

    HashScheme scheme();

    /**
     * The hash of every full block of {@code tokenIds}, first block first; the tokens after the
     * last full block are ignored.
     *
     * @throws HashInputException if {@code extra} holds keys this scheme cannot carry or that do not fit
     *     the prompt (a multimodal item past its end, a prompt-embedding hash per block missing)
     * @throws IllegalArgumentException if {@code blockSize} is not positive or a token id is negative
     */
    List<BlockHash> hashPrompt(int[] tokenIds, int blockSize, ExtraKeys extra);
}
