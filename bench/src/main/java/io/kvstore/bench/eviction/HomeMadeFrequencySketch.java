package io.kvstore.bench.eviction;

/**
 * A count-min sketch of 4-bit counters estimating how often each block was seen recently, the
 * frequency filter of W-TinyLFU (Einziger, Friedman, Manes: "TinyLFU: A Highly Efficient Cache
 * Admission Policy", 2017).
 *
 * <p>Four counters per key, each in a different 16-counter long, picked by four hashes; the estimate is
 * their minimum, so collisions only ever overestimate. When the number of increments reaches ten times
 * the table's length (about ten per tracked key, as in Caffeine), every counter is halved: this aging keeps the sketch about the recent past,
 * and the 4-bit cap (15) bounds how long a once-hot key keeps its lead. The table grows with the
 * tracked population so the error stays small.
 */
final class HomeMadeFrequencySketch {

    private static final long RESET_MASK = 0x7777_7777_7777_7777L;
    private static final long[] SEEDS = {
        0xc3a5c85c97cb3127L, 0xb492b66fbe98f273L, 0x9ae16a3b2f90404fL, 0xcbf29ce484222325L
    };

    private long[] table = new long[64];
    private int additions;

    /**
     * Grows the table when the tracked population outgrows it. Doubling copies the table into both
     * halves: a key's slot in the larger table is its old slot or that plus the old length, so every
     * key keeps its counts.
     */
    void ensureCapacity(int population) {
        while (table.length < population && table.length < (1 << 26)) {
            long[] grown = new long[table.length * 2];
            System.arraycopy(table, 0, grown, 0, table.length);
            System.arraycopy(table, 0, grown, table.length, table.length);
            table = grown;
        }
    }

    /** The estimated recent frequency of the key, 0 to 15. */
    int frequency(Object key) {
        int hash = spread(key.hashCode());
        int min = 15;
        for (int i = 0; i < 4; i++) {
            min = Math.min(min, counter(hash, i));
        }
        return min;
    }

    void increment(Object key) {
        int hash = spread(key.hashCode());
        boolean added = false;
        for (int i = 0; i < 4; i++) {
            int index = indexOf(hash, i);
            int shift = offsetOf(hash, i) << 2;
            long mask = 0xFL << shift;
            if ((table[index] & mask) != mask) {
                table[index] += 1L << shift;
                added = true;
            }
        }
        if (added && ++additions >= 10 * table.length) {
            reset();
        }
    }

    private void reset() {
        for (int i = 0; i < table.length; i++) {
            table[i] = (table[i] >>> 1) & RESET_MASK;
        }
        additions /= 2;
    }

    private int counter(int hash, int i) {
        return (int) ((table[indexOf(hash, i)] >>> (offsetOf(hash, i) << 2)) & 0xF);
    }

    private int indexOf(int hash, int i) {
        long h = (hash + SEEDS[i]) * SEEDS[i];
        h += h >>> 32;
        return (int) h & (table.length - 1);
    }

    private static int offsetOf(int hash, int i) {
        return (hash >>> (i << 3)) & 0xF;
    }

    private static int spread(int x) {
        x = ((x >>> 16) ^ x) * 0x45d9f3b;
        x = ((x >>> 16) ^ x) * 0x45d9f3b;
        return (x >>> 16) ^ x;
    }
}
