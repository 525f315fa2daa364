package io.kvstore.transfer.nixl;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Deterministic, seed-dependent bytes for the NIXL tests' byte-exact comparisons. */
final class Patterns {

    private Patterns() {}

    /** Fills {@code segment} (a multiple of 8 bytes) with an xorshift64 sequence started at {@code seed}. */
    static void fill(MemorySegment segment, long seed) {
        long x = seed;
        for (long i = 0; i < segment.byteSize(); i += 8) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, i, x);
        }
    }
}
