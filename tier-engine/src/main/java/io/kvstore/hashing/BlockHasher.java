package io.kvstore.hashing;

import io.kvstore.catalog.BlockHash;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns a prompt's token ids into the chained hashes of its full blocks, so that equal hashes mean equal
 * prefixes (same tokens, same extra keys, same everything before). Only full blocks are hashed; a
 * trailing partial block has no hash. Thread-safe.
 */
public sealed interface BlockHasher permits Sha256CborHasher, Xxh3Hasher {

    HashScheme scheme();

    /**
     * The hash of one block given its parent's hash (null for the first block of a prompt).
     *
     * @param blockIndex the block's position in the prompt (extra keys differ for block 0)
     */
    BlockHash hashBlock(BlockHash parent, int[] tokenIds, int from, int to, int blockIndex, ExtraKeys extra);

    /** The hashes of every full block of {@code tokenIds}, first block first. */
    default List<BlockHash> hashPrompt(int[] tokenIds, int blockSize, ExtraKeys extra) {
        checkPrompt(tokenIds, blockSize);
        int blocks = tokenIds.length / blockSize;
        List<BlockHash> hashes = new ArrayList<>(blocks);
        BlockHash parent = null;
        for (int b = 0; b < blocks; b++) {
            parent = hashBlock(parent, tokenIds, b * blockSize, (b + 1) * blockSize, b, extra == null ? ExtraKeys.NONE : extra);
            hashes.add(parent);
        }
        return hashes;
    }

    /** Refuses a non-positive block size and negative token ids, naming the position. */
    static void checkPrompt(int[] tokenIds, int blockSize) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("block size must be positive, got " + blockSize);
        }
        for (int i = 0; i < tokenIds.length; i++) {
            if (tokenIds[i] < 0) {
                throw new IllegalArgumentException("token id at position " + i + " is negative: " + tokenIds[i]);
            }
        }
    }

    /**
     * The hasher of a namespace.
     *
     * @param seedOrSalt for {@code sha256_cbor} the seed of NONE_HASH (vLLM's PYTHONHASHSEED; must be set,
     *     as a random seed would make hashes useless across processes); ignored by {@code xxh3}, whose
     *     salt comes with each request's extra keys
     */
    static BlockHasher of(HashScheme scheme, String seedOrSalt) {
        return switch (scheme) {
            case SHA256_CBOR -> new Sha256CborHasher(seedOrSalt);
            case XXH3 -> new Xxh3Hasher();
        };
    }
}
