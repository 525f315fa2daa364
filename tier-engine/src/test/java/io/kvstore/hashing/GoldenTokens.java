package io.kvstore.hashing;

import io.kvstore.block.BlockHash;
import java.util.List;
import java.util.stream.IntStream;

/** The token patterns of docs/hashing/golden_sha256_cbor.py and golden_xxh3.c. */
final class GoldenTokens {

    /** Ids exercising every CBOR integer width and values at and above 2^16, up to 2^31 - 1. */
    static final int[] WIDE = {
        0,
        23,
        24,
        255,
        256,
        65535,
        65536,
        70000,
        16777216,
        Integer.MAX_VALUE - 1,
        Integer.MAX_VALUE,
        100000,
        131072,
        1,
        2,
        3
    };

    private GoldenTokens() {}

    static int[] seq(int start, int n) {
        return IntStream.range(start, start + n).toArray();
    }

    static List<String> hex(List<BlockHash> hashes) {
        return hashes.stream().map(BlockHash::hex).toList();
    }
}
