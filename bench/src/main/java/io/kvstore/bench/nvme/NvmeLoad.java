package io.kvstore.bench.nvme;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.nvme.NvmeTier;
import io.kvstore.tier.nvme.NvmeTierConfig;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Sequential write then read bandwidth of the NVMe tier: batches of {@code depth} blocks, so {@code depth}
 * requests are in flight, each batch made durable (fdatasync + synced index) as the tier always does.
 * Usage: NvmeLoad DIR BLOCK_BYTES DEPTH TOTAL_BYTES. Prints one line: "write MB/s read MB/s".
 */
public final class NvmeLoad {

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int block = Integer.parseInt(args[1]);
        int depth = Integer.parseInt(args[2]);
        long total = Long.parseLong(args[3]);
        int blocks = (int) (total / block);
        long capacity = ((total + (64L << 20)) / (64L << 20) + 1) * (64L << 20);
        NvmeTierConfig config = new NvmeTierConfig(List.of(dir), capacity, 64L << 20, 8L << 20, depth);
        try (Arena arena = Arena.ofShared();
                NvmeTier tier = new NvmeTier(config)) {
            // distinct source and target buffers per in-flight request, 4 KiB-aligned like tier slots
            List<MemorySegment> sources = new ArrayList<>();
            List<MemorySegment> targets = new ArrayList<>();
            for (int i = 0; i < depth; i++) {
                MemorySegment s = arena.allocate(block, 4096);
                for (long o = 0; o < block; o += 8) {
                    s.set(ValueLayout.JAVA_LONG, o, o * 31 + i);
                }
                sources.add(s);
                targets.add(arena.allocate(block, 4096));
            }
            int[] crcs = sources.stream().mapToInt(Checksums::crc32c).toArray();
            long start = System.nanoTime();
            for (int b = 0; b < blocks; b += depth) {
                List<BlockRecord> records = new ArrayList<>(depth);
                List<MemorySegment> batch = new ArrayList<>(depth);
                for (int i = 0; i < depth && b + i < blocks; i++) {
                    records.add(new BlockRecord(key(b + i), null, block, crcs[i]));
                    batch.add(sources.get(i));
                }
                tier.writeAll(records, batch);
            }
            double writeSeconds = (System.nanoTime() - start) / 1e9;
            start = System.nanoTime();
            for (int b = 0; b < blocks; b += depth) {
                List<BlockKey> keys = new ArrayList<>(depth);
                List<MemorySegment> batch = new ArrayList<>(depth);
                for (int i = 0; i < depth && b + i < blocks; i++) {
                    keys.add(key(b + i));
                    batch.add(targets.get(i));
                }
                tier.readAll(keys, batch);
            }
            double readSeconds = (System.nanoTime() - start) / 1e9;
            double mb = (double) blocks * block / 1e6;
            System.out.printf("%.0f %.0f%n", mb / writeSeconds, mb / readSeconds);
        }
    }

    private static BlockKey key(int i) {
        return new BlockKey("bench", BlockHash.ofLong(i));
    }
}
