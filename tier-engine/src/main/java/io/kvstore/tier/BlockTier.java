package io.kvstore.tier;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * One tier's block storage: bytes in fixed-size slots, each block checksummed. A tier stores and
 * returns bytes; which blocks it should hold is decided by the engine above it (catalog + policy).
 * Implementations are thread-safe.
 */
public interface BlockTier extends AutoCloseable {

    TierId id();

    /** The memory or storage provider, as shown to operators (e.g. "host", "emulated-device", "file"). */
    String provider();

    long capacityBytes();

    /** Bytes of slots in use (slot size, not block length). */
    long usedBytes();

    int blockCount();

    /**
     * Stores {@code src} (exactly {@code record.length()} bytes) under {@code record.key()}. When this
     * returns the block is complete and readable; before that no reader can see it.
     *
     * @throws TierFullException when no slot is free
     */
    void write(BlockRecord record, MemorySegment src) throws IOException;

    /**
     * Copies the block's bytes into {@code dst} after verifying their CRC32C.
     *
     * @return the block's record
     * @throws BlockNotFoundException when the tier does not hold the key
     * @throws ChecksumMismatchException when the bytes no longer match their checksum
     */
    BlockRecord read(BlockKey key, MemorySegment dst) throws IOException;

    /** Frees the block's slot; false when the tier did not hold it. */
    boolean delete(BlockKey key);

    boolean contains(BlockKey key);

    /** Blocks this tier already held when it opened (durable tiers); empty for volatile ones. */
    default List<BlockRecord> recovered() {
        return List.of();
    }

    @Override
    void close();
}
