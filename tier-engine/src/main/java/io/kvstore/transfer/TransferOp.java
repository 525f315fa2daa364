package io.kvstore.transfer;

/** Direction of a one-sided transfer, seen from the side that posts it (values match NIXL's). */
public enum TransferOp {
    /** Remote memory into local memory (NIXL_READ = 0). */
    READ,
    /** Local memory into remote memory (NIXL_WRITE = 1). */
    WRITE
}
