package io.kvstore.tier;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Collection;
import java.util.List;
import org.jspecify.annotations.Nullable;

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

    /**
     * Bytes the tier can hold now: its capacity, less what the storage below it failed to provide (a
     * filesystem that ran out of space before the tier's files reached their configured size).
     */
    default long usableBytes() {
        return capacityBytes();
    }

    /** Why {@link #usableBytes} is below the capacity, or null while it is not. */
    default @Nullable String shortage() {
        return null;
    }

    /** Writes refused by the storage below for want of space (ENOSPC, EFBIG, EDQUOT) since the tier opened. */
    default long outOfSpaceErrors() {
        return 0;
    }

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

    /**
     * Stores several blocks as one unit of work where the tier can do better than one {@link #write} each
     * (the NVMe tier: one data sync and one index commit for the batch). Either every block is stored or
     * the call throws and none is visible.
     */
    default void writeAll(List<BlockRecord> records, List<MemorySegment> sources) throws IOException {
        for (int i = 0; i < records.size(); i++) {
            write(records.get(i), sources.get(i));
        }
    }

    /** Whether {@link #writeAll} is cheaper per block than {@link #write}, so movers should batch. */
    default boolean batchesWrites() {
        return false;
    }

    /**
     * The block's bytes in place, verified against their CRC32C, for tiers whose slots are addressable
     * memory; null for tiers that must copy ({@link #read}). Valid while the caller holds the block as a
     * reader.
     */
    default @Nullable MemorySegment verifiedView(BlockKey key) throws IOException {
        return null;
    }

    /** Frees the block's slot; false when the tier did not hold it. */
    boolean delete(BlockKey key);

    /** What {@link #copyOf} answers when the tier holds no copy of the key. */
    long NO_COPY = 0;

    /**
     * Which copy of the key the tier holds now: a number no other copy of the key shares while the tier is open,
     * or {@link #NO_COPY}. A freeing deferred until a block's last reader names the copy it frees with it, since
     * by then the tier may hold a newer copy of the key ({@link #delete(BlockKey, long)}). Lock-free: asked under a
     * catalog entry's monitor.
     *
     * <p>The default suits a tier that lets go of a copy only when told to: while it holds a copy the engine writes
     * no other copy of the key there, so the copy held from this call until that copy's delete is this one. A tier
     * that drops copies itself (NVMe drops one it cannot read back) numbers each copy.
     */
    default long copyOf(BlockKey key) {
        return contains(key) ? 1 : NO_COPY;
    }

    /**
     * Frees the slot of {@code copy} (a {@link #copyOf} answer) only: false, freeing nothing, when the tier holds
     * another copy of the key now, or none.
     */
    default boolean delete(BlockKey key, long copy) {
        return copy != NO_COPY && copyOf(key) == copy && delete(key);
    }

    /**
     * Makes the deletion of these blocks survive a restart before their slots are freed: a durable tier no longer
     * finds them when it next opens, even after a crash, while each copy stays readable and its slot taken until
     * {@link #delete} (after the block's last reader). Keys the tier does not hold are skipped. Volatile tiers
     * forget everything at a restart and have nothing to do.
     */
    default void forgetAtRestart(Collection<BlockKey> keys) {}

    boolean contains(BlockKey key);

    /** Blocks this tier already held when it opened (durable tiers); empty for volatile ones. */
    default List<BlockRecord> recovered() {
        return List.of();
    }

    @Override
    void close();
}
