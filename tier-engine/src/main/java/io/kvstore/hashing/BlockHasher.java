package io.kvstore.hashing;

import io.kvstore.block.BlockHash;
import java.util.List;

/**
 * Computes the chained hashes that identify blocks of tokens, exactly as the engine that owns a
 * namespace computes them, so a prefix stored by one engine is found by the next. One
 * implementation per {@link HashScheme}; instances are immutable and safe to share between threads.
 *
 * <p>Only full blocks are hashed: a trailing partial block has no key. Token ids are non-negative
 * {@code int}s (vLLM's and Dynamo's vocabularies fit well below 2<sup>31</sup>). A null
 * {@link ExtraKeys} means {@link ExtraKeys#NONE}.
 */
public sealed interface BlockHasher permits Sha256CborHasher, Xxh3Hasher {

    /**
     * The hasher a namespace configured with {@code scheme} and {@code seed} uses.
     *
     * @param seed for {@code sha256_cbor} the engine's {@code PYTHONHASHSEED} (required, e.g.
     *     {@code "0"}); for {@code xxh3} null to derive the salt hash per request from its LoRA name
     *     and cache salt as Dynamo KVBM does, or a fixed salt hash as an unsigned decimal or
     *     {@code 0x}-prefixed hex 64-bit number
     * @throws IllegalArgumentException naming the scheme and what is wrong with the seed
     */
    static BlockHasher create(HashScheme scheme, String seed) {
        return switch (scheme) {
            case SHA256_CBOR -> new Sha256CborHasher(seed);
            case XXH3 -> seed == null ? new Xxh3Hasher() : new Xxh3Hasher(Xxh3Hasher.parseSaltHash(seed));
        };
    }

    HashScheme scheme();

    /**
     * The hash of every full block of {@code tokenIds}, first block first; the tokens after the
     * last full block are ignored.
     *
     * @throws IllegalArgumentException if {@code blockSize} is not positive, a token id is negative,
     *     or {@code extra} holds keys this scheme cannot carry
     */
    List<BlockHash> hashPrompt(int[] tokenIds, int blockSize, ExtraKeys extra);

    /**
     * The hash of the block {@code tokenIds[from, to)} following the block hashed {@code parent}
     * (null for a prompt's first block, which alone carries the cache salt). Chaining this call
     * over a prompt gives the same hashes as {@link #hashPrompt}.
     *
     * @throws IllegalArgumentException if the range is empty or outside the array, a token id is
     *     negative, {@code parent} is not a hash of this scheme, or {@code extra} holds keys this
     *     scheme cannot carry
     */
    BlockHash hashBlock(BlockHash parent, int[] tokenIds, int from, int to, ExtraKeys extra);
}
