package io.kvstore.hashing;

/** Argument checks shared by both hashers, so both reject bad input with the same words. */
final class HashInputs {

    private HashInputs() {}

    static void checkBlockSize(int blockSize) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("block size must be positive, got " + blockSize);
        }
    }

    /** Rejects an empty or out-of-bounds range and negative token ids in it. */
    static void checkTokens(int[] tokenIds, int from, int to) {
        if (from < 0 || to > tokenIds.length || from >= to) {
            throw new IllegalArgumentException(
                    "token range [" + from + ", " + to + ") is empty or outside " + tokenIds.length + " tokens");
        }
        for (int i = from; i < to; i++) {
            if (tokenIds[i] < 0) {
                throw new IllegalArgumentException("token id " + tokenIds[i] + " at index " + i + " is negative");
            }
        }
    }
}
