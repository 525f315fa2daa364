package io.kvstore.engine;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import org.jspecify.annotations.Nullable;

/** A block a peer is about to write in place: its key, its parent's hash (null for a first block) and its length. */
public record InPlaceBlock(BlockKey key, @Nullable BlockHash parent, int length) {

    public InPlaceBlock {
        if (key == null) {
            throw new IllegalArgumentException("block key is required");
        }
        if (length <= 0) {
            throw new IllegalArgumentException("block " + key + " has length " + length + "; it must be positive");
        }
    }
}
