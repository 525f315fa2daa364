package io.kvstore.tier.nvme;

import io.kvstore.block.BlockRecord;
import io.kvstore.engine.TestBlocks;
import io.kvstore.tier.Checksums;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Child process of {@link NvmeTierCrashTest}: stores blocks in a loop and prints "ACK id" after each
 * store returns, until it is killed.
 */
public final class NvmeCrashWriter {

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int blockSize = Integer.parseInt(args[1]);
        try (Arena arena = Arena.ofConfined();
                NvmeTier tier = new NvmeTier(NvmeTierCrashTest.config(dir))) {
            System.out.println("READY");
            System.out.flush();
            for (long id = 1; ; id++) {
                MemorySegment bytes = TestBlocks.bytes(arena, id, blockSize);
                tier.write(
                        new BlockRecord(TestBlocks.key("crash", id), null, blockSize, Checksums.crc32c(bytes)), bytes);
                System.out.println("ACK " + id);
                System.out.flush();
                if (id % 64 == 0) {
                    // keep the tier from filling: the test only needs a steady stream of stores
                    for (long old = id - 63; old <= id - 32; old++) {
                        tier.delete(TestBlocks.key("crash", old));
                    }
                }
            }
        }
    }
}
