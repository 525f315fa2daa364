package io.kvstore.transfer;

/** The kind of memory a region lives in (values match NIXL's segment types). */
public enum MemoryKind {
    /** Host memory (NIXL DRAM_SEG = 0). */
    DRAM,
    /** GPU memory (NIXL VRAM_SEG = 1). */
    VRAM,
    /** Block device (NIXL BLK_SEG = 2). */
    BLOCK,
    /** Object store (NIXL OBJ_SEG = 3). */
    OBJECT,
    /** File (NIXL FILE_SEG = 4). */
    FILE
}
