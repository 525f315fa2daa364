package io.kvstore.block;

import org.jspecify.annotations.Nullable;

/**
 * What a tier keeps about one block besides its bytes: the key, the parent's hash (null for the
 * first block of a prompt), the length in bytes and the CRC32C of those bytes.
 */
public record BlockRecord(BlockKey key, @Nullable BlockHash parent, int length, int crc32c) {

    public BlockRecord {
        if (length <= 0) {
            throw new IllegalArgumentException("block length must be positive, got " + length);
        }
    }
}
