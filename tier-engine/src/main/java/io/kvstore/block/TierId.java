package io.kvstore.block;

import org.jspecify.annotations.Nullable;

/** The storage tiers, fastest first: a block demotes towards higher ordinals. */
public enum TierId {
    /** G1: GPU memory (or emulated device memory in tests and demos). */
    HBM,
    /** G2: pinned host memory. */
    DRAM,
    /** G3: preallocated files on local NVMe. */
    NVME;

    /** The next slower tier, or null for the slowest. */
    public @Nullable TierId below() {
        return ordinal() + 1 < values().length ? values()[ordinal() + 1] : null;
    }
}
