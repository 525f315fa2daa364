package io.kvstore.bench.ucx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The memory-bound reference for shared-memory RMA: one {@code MemorySegment.copy} per message between
 * two 256 MiB regions, messages mapped in reverse order exactly like {@link UcxBandwidth}'s, so neither
 * side stays in the CPU caches. A shared-memory put or get is one such copy (into or out of a segment the
 * peer mapped), so this is what the engine can reach; ucx_perftest reuses one buffer per message size,
 * which fits the caches up to 1 MiB here. Prints {@code size MiB/s}.
 *
 * <p>Arguments: seconds per point, sizes...
 */
public final class MemcpyBandwidth {

    private static final long WORKING_SET = 256L << 20;

    public static void main(String[] args) {
        double seconds = Double.parseDouble(args[0]);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(WORKING_SET, 4096);
            MemorySegment b = arena.allocate(WORKING_SET, 4096);
            a.fill((byte) 1);
            b.fill((byte) 2);
            for (int i = 1; i < args.length; i++) {
                long size = Long.parseLong(args[i]);
                long blocks = WORKING_SET / size;
                copyAll(a, b, size, blocks); // warm-up
                long bytes = 0;
                long start = System.nanoTime();
                long end = start + (long) (seconds * 1e9);
                while (System.nanoTime() < end) {
                    bytes += copyAll(a, b, size, blocks);
                }
                double mibs = bytes / ((System.nanoTime() - start) / 1e9) / (1 << 20);
                System.out.printf("%d %.0f%n", size, mibs);
            }
        }
    }

    private static long copyAll(MemorySegment from, MemorySegment to, long size, long blocks) {
        for (long i = 0; i < blocks; i++) {
            MemorySegment.copy(from, i * size, to, (blocks - 1 - i) * size, size);
        }
        return blocks * size;
    }
}
