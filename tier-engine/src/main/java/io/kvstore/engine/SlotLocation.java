package io.kvstore.engine;

import io.kvstore.block.BlockKey;

/**
 * Where a leased block's bytes sit in a memory tier's registered region, for a peer that reads them
 * one-sided: {@code offset} bytes in, {@code length} bytes long, with the CRC32C the reader checks. An
 * offset of -1 means the tier holds no published copy of the block (it is elsewhere, or a move is still
 * filling its slot there).
 */
public record SlotLocation(BlockKey key, long offset, int length, int crc32c) {

    public boolean present() {
        return offset >= 0;
    }
}
