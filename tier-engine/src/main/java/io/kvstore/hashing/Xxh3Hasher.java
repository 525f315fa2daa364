package io.kvstore.hashing;

import io.kvstore.block.BlockHash;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import net.openhft.hashing.LongHashFunction;

/**
 * Dynamo KVBM's block identity: a 64-bit XXH3 hash of each block's tokens, chained into a sequence
 * hash that covers the whole prefix; the sequence hash is the block's key.
 *
 * <p>What Dynamo does, read from {@code lib/llm/src/tokens.rs} and {@code lib/tokens/src/lib.rs}
 * ({@code TokenBlockChunk}, {@code TokenBlock::from_chunk}) and from the {@code SaltPayload} of the
 * KVBM scheduler's {@code Request} ({@code lib/kv-hashing}), reproduced here:
 * <pre>
 *   salt_hash = xxh3_64(serde_json({"salt": cache_salt, "lora_name": lora_name}), seed 0)
 *   block[i]  = xxh3_64(u32-LE tokens of block i, seed salt_hash)
 *   seq[0]    = block[0]
 *   seq[i]    = xxh3_64(u64-LE seq[i-1] ‖ u64-LE block[i], seed salt_hash)
 * </pre>
 * The JSON is compact, in that field order, with absent fields left out ({@code {}} when both are)
 * and empty strings treated as absent, as Dynamo's {@code compute_salt_hash} does. Note that Dynamo
 * seeds the chaining step with the salt hash too, not with 0: the two agree only when the salt hash
 * is 0, which is what Dynamo's {@code TokenBlockSequence} uses when given no salt hash at all. That
 * variant is this class with a fixed salt hash of 0 ({@link #Xxh3Hasher(long)}).
 *
 * <p>The scheme has no place for further per-block keys, so {@link ExtraKeys#more()} must be
 * empty. Hashes are {@link BlockHash#ofLong big-endian} 8-byte values, whose hex reads as Dynamo
 * prints the {@code u64}. XXH3 comes from zero-allocation-hashing ({@link LongHashFunction#xx3(long)}),
 * which reads {@code int[]} and {@code long[]} in native order; on a big-endian CPU the tokens are
 * first laid out little-endian.
 */
public final class Xxh3Hasher implements BlockHasher {

    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private final LongHashFunction fixed;
    private final long fixedSaltHash;

    /** Derives the salt hash per request from its LoRA name and cache salt, as KVBM does. */
    public Xxh3Hasher() {
        this.fixed = null;
        this.fixedSaltHash = 0;
    }

    /**
     * Uses {@code saltHash} for every request, as Dynamo's {@code TokenBlockSequence::new(tokens,
     * block_size, Some(salt_hash))} does; requests must then carry no LoRA name and no cache salt.
     */
    public Xxh3Hasher(long saltHash) {
        this.fixed = LongHashFunction.xx3(saltHash);
        this.fixedSaltHash = saltHash;
    }

    @Override
    public HashScheme scheme() {
        return HashScheme.XXH3;
    }

    /** Dynamo's salt hash of a request with this cache salt and LoRA name (either may be null). */
    public static long saltHash(String cacheSalt, String loraName) {
        return LongHashFunction.xx3(0).hashBytes(saltPayload(cacheSalt, loraName));
    }

    @Override
    public List<BlockHash> hashPrompt(int[] tokenIds, int blockSize, ExtraKeys extra) {
        HashInputs.checkBlockSize(blockSize);
        LongHashFunction xxh3 = functionFor(extra);
        int blocks = tokenIds.length / blockSize;
        if (blocks == 0) {
            return List.of();
        }
        HashInputs.checkTokens(tokenIds, 0, blocks * blockSize);
        BlockHash[] hashes = new BlockHash[blocks];
        long[] pair = new long[2];
        long seq = 0;
        for (int b = 0; b < blocks; b++) {
            long block = blockHash(xxh3, tokenIds, b * blockSize, blockSize);
            seq = b == 0 ? block : sequenceHash(xxh3, pair, seq, block);
            hashes[b] = BlockHash.ofLong(seq);
        }
        return Collections.unmodifiableList(Arrays.asList(hashes));
    }

    @Override
    public BlockHash hashBlock(BlockHash parent, int[] tokenIds, int from, int to, ExtraKeys extra) {
        LongHashFunction xxh3 = functionFor(extra);
        HashInputs.checkTokens(tokenIds, from, to);
        if (parent != null && parent.length() != 8) {
            throw new IllegalArgumentException(
                    "an xxh3 parent hash has 8 bytes, got " + parent.length() + " (" + parent.hex() + ")");
        }
        long block = blockHash(xxh3, tokenIds, from, to - from);
        return BlockHash.ofLong(parent == null ? block : sequenceHash(xxh3, new long[2], parent.asLong(), block));
    }

    private LongHashFunction functionFor(ExtraKeys extra) {
        ExtraKeys keys = extra == null ? ExtraKeys.NONE : extra;
        if (!keys.more().isEmpty()) {
            throw new IllegalArgumentException("xxh3 (Dynamo KVBM) hashes only the LoRA name and cache salt besides "
                    + "the tokens; got " + keys.more().size() + " further extra keys");
        }
        if (fixed == null) {
            return LongHashFunction.xx3(saltHash(keys.cacheSalt(), keys.loraName()));
        }
        if (!isEmpty(keys.loraName()) || !isEmpty(keys.cacheSalt())) {
            throw new IllegalArgumentException("this xxh3 namespace uses the fixed salt hash " + fixedSaltHash
                    + ", so requests cannot carry a LoRA name or cache salt; configure it without a seed instead");
        }
        return fixed;
    }

    static long blockHash(LongHashFunction xxh3, int[] tokens, int from, int count) {
        return LITTLE_ENDIAN ? xxh3.hashInts(tokens, from, count) : xxh3.hashBytes(littleEndian(tokens, from, count));
    }

    static byte[] littleEndian(int[] tokens, int from, int count) {
        byte[] bytes = new byte[4 * count];
        for (int i = 0; i < count; i++) {
            int t = tokens[from + i];
            bytes[4 * i] = (byte) t;
            bytes[4 * i + 1] = (byte) (t >>> 8);
            bytes[4 * i + 2] = (byte) (t >>> 16);
            bytes[4 * i + 3] = (byte) (t >>> 24);
        }
        return bytes;
    }

    private static long sequenceHash(LongHashFunction xxh3, long[] pair, long parent, long block) {
        if (!LITTLE_ENDIAN) {
            parent = Long.reverseBytes(parent);
            block = Long.reverseBytes(block);
        }
        pair[0] = parent;
        pair[1] = block;
        return xxh3.hashLongs(pair);
    }

    /** The salt payload as serde_json writes it: compact, fields in order, absent ones omitted. */
    static byte[] saltPayload(String cacheSalt, String loraName) {
        StringBuilder json = new StringBuilder(32).append('{');
        if (!isEmpty(cacheSalt)) {
            json.append("\"salt\":");
            jsonString(json, cacheSalt);
        }
        if (!isEmpty(loraName)) {
            json.append(json.length() > 1 ? "," : "").append("\"lora_name\":");
            jsonString(json, loraName);
        }
        return json.append('}').toString().getBytes(StandardCharsets.UTF_8);
    }

    /** serde_json's escaping: quote, backslash and control characters; everything else raw. */
    private static void jsonString(StringBuilder json, String s) {
        json.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> json.append("\\\"");
                case '\\' -> json.append("\\\\");
                case '\b' -> json.append("\\b");
                case '\f' -> json.append("\\f");
                case '\n' -> json.append("\\n");
                case '\r' -> json.append("\\r");
                case '\t' -> json.append("\\t");
                default -> {
                    if (c < 0x20) {
                        json.append("\\u00")
                                .append(Character.forDigit(c >> 4, 16))
                                .append(Character.forDigit(c & 0xF, 16));
                    } else {
                        json.append(c);
                    }
                }
            }
        }
        json.append('"');
    }

    private static boolean isEmpty(String s) {
        return s == null || s.isEmpty();
    }

    /** Parses a namespace's fixed salt hash: an unsigned decimal or {@code 0x}-prefixed hex 64-bit number. */
    static long parseSaltHash(String seed) {
        String s = seed.strip();
        try {
            if (s.startsWith("0x") || s.startsWith("0X")) {
                return Long.parseUnsignedLong(s.substring(2), 16);
            }
            return Long.parseUnsignedLong(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "xxh3 seed must be an unsigned 64-bit salt hash (decimal or 0x hex), got '" + seed + "'");
        }
    }
}
