package io.kvstore.engine;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

/** Keys and deterministic block contents for tests. */
public final class TestBlocks {

    private TestBlocks() {}

    public static BlockKey key(String namespace, long id) {
        return new BlockKey(namespace, BlockHash.ofLong(id));
    }

    /** Bytes derived from {@code id} so any mix-up between blocks shows. */
    public static MemorySegment bytes(Arena arena, long id, int length) {
        MemorySegment segment = arena.allocate(length, 4096);
        SplittableRandom random = new SplittableRandom(id * 0x9E3779B97F4A7C15L + length);
        for (long i = 0; i + 8 <= length; i += 8) {
            segment.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong());
        }
        for (long i = length / 8 * 8; i < length; i++) {
            segment.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
        }
        return segment;
    }

    /**
     * Flips one byte of {@code key}'s copy in {@code tier}'s block file and syncs it: the copy on disk now fails its
     * checksum.
     */
    public static void flipAByte(NvmeTier tier, BlockKey key) throws IOException {
        try (RandomAccessFile file = new RandomAccessFile(tier.fileOf(key).toFile(), "rw")) {
            long at = tier.offsetOf(key) % tier.fileSize() + 1234;
            file.seek(at);
            int b = file.read();
            file.seek(at);
            file.write(b ^ 0x01);
            file.getFD().sync();
        }
    }
}
