package io.kvstore.transfer.ucx;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;

/** Deterministic block contents and their checksums, so each side can verify without the other's bytes. */
final class Patterns {

    private Patterns() {}

    /** Fills {@code block} with the pattern of block number {@code index} under {@code seed}. */
    static void fill(MemorySegment block, long seed, long index) {
        long base = (seed * 0x9E3779B97F4A7C15L) ^ (index * 0xC2B2AE3D27D4EB4FL);
        long n = block.byteSize() / 8;
        for (long k = 0; k < n; k++) {
            block.setAtIndex(JAVA_LONG, k, base + k * 0xBF58476D1CE4E5B9L);
        }
    }

    /** Fills a region of {@code blocks} blocks, block i with pattern i. */
    static void fillRegion(MemorySegment region, long blockSize, long seed) {
        for (long i = 0; i < region.byteSize() / blockSize; i++) {
            fill(region.asSlice(i * blockSize, blockSize), seed, i);
        }
    }

    static long crc(MemorySegment region) {
        CRC32C crc = new CRC32C();
        crc.update(region.asByteBuffer());
        return crc.getValue();
    }

    /** CRC32C of a region whose block i holds pattern {@code order(i)}, computed through one scratch block. */
    static long expectedCrc(
            long blocks, long blockSize, long seed, java.util.function.LongUnaryOperator order, MemorySegment scratch) {
        CRC32C crc = new CRC32C();
        MemorySegment block = scratch.asSlice(0, blockSize);
        for (long i = 0; i < blocks; i++) {
            fill(block, seed, order.applyAsLong(i));
            crc.update(block.asByteBuffer());
        }
        return crc.getValue();
    }
}
