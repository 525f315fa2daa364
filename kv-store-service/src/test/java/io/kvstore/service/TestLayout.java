package io.kvstore.service;

import io.kvstore.block.BlockHash;
import io.kvstore.hashing.BlockHasher;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.hashing.HashScheme;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** The small layout tests declare: 2 layers x 2 KV heads x 64 dims x fp16 x 16 tokens = 16 KiB blocks. */
final class TestLayout {

    static final int BLOCK_BYTES = 2 * 2 * 2 * 64 * 2 * 16;
    static final int BLOCK_TOKENS = 16;

    static String declaration(String model) {
        return """
                {"model":"%s","layout":{"layers":2,"kvHeads":2,"headDim":64,"dtype":"float16","blockSize":16},
                 "hashScheme":"sha256_cbor","hashSeed":"0"}""".formatted(model);
    }

    static int[] tokens(int blocks, int seed) {
        Random r = new Random(seed);
        int[] t = new int[blocks * BLOCK_TOKENS];
        for (int i = 0; i < t.length; i++) {
            t[i] = r.nextInt(150_000);
        }
        return t;
    }

    static List<BlockHash> hashes(int[] tokens) {
        return BlockHasher.create(HashScheme.SHA256_CBOR, "0").hashPrompt(tokens, BLOCK_TOKENS, ExtraKeys.NONE);
    }

    static List<byte[]> blocks(int count, int seed) {
        Random r = new Random(seed);
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] b = new byte[BLOCK_BYTES];
            r.nextBytes(b);
            out.add(b);
        }
        return out;
    }

    static String tokenJson(int[] tokens) {
        var sb = new StringBuilder("[");
        for (int i = 0; i < tokens.length; i++) {
            sb.append(i == 0 ? "" : ",").append(tokens[i]);
        }
        return sb.append(']').toString();
    }
}
