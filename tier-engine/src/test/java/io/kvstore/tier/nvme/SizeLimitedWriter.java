package io.kvstore.tier.nvme;

import io.kvstore.block.BlockRecord;
import io.kvstore.engine.TestBlocks;
import io.kvstore.tier.Checksums;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

/**
 * The child JVM of {@link NvmeTierSizeLimitTest}, run under {@code prlimit --fsize}: reads back the blocks
 * the parent stored, tries to store two more, and prints one line per outcome.
 */
public final class SizeLimitedWriter {

    static final int BLOCK = 256 * 1024;

    static NvmeTierConfig config(Path dir) {
        return new NvmeTierConfig(List.of(dir), 4L << 20, 1 << 20, BLOCK, 2);
    }

    static BlockRecord record(long id, MemorySegment bytes) {
        return new BlockRecord(TestBlocks.key("m", id), null, BLOCK, Checksums.crc32c(bytes));
    }

    public static void main(String[] args) throws Exception {
        int existing = Integer.parseInt(args[1]);
        try (Arena arena = Arena.ofConfined();
                NvmeTier tier = new NvmeTier(config(Path.of(args[0])))) {
            for (int id = 0; id < existing; id++) {
                MemorySegment dst = arena.allocate(BLOCK, 4096);
                tier.read(TestBlocks.key("m", id), dst);
                System.out.println(
                        dst.mismatch(TestBlocks.bytes(arena, id, BLOCK)) == -1 ? "SERVED " + id : "WRONG " + id);
            }
            for (int id = existing; id < existing + 2; id++) {
                MemorySegment src = TestBlocks.bytes(arena, id, BLOCK);
                try {
                    tier.write(record(id, src), src);
                    System.out.println("STORED " + id);
                } catch (Exception e) {
                    System.out.println("FAILED " + id + " " + e.getClass().getSimpleName() + ": " + e.getMessage());
                }
            }
            for (int id = 0; id < existing; id++) {
                MemorySegment dst = arena.allocate(BLOCK, 4096);
                tier.read(TestBlocks.key("m", id), dst);
                System.out.println(
                        dst.mismatch(TestBlocks.bytes(arena, id, BLOCK)) == -1 ? "STILL " + id : "WRONG " + id);
            }
            System.out.println("HOLDS " + tier.blockCount());
        }
    }
}
