package io.kvstore.hashing;

import io.kvstore.block.BlockHash;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import net.openhft.hashing.LongHashFunction;

/**
 * Dynamo's block identity, in both of the forms Dynamo computes it today: a 64-bit XXH3 hash of each
 * block's tokens (u32 little-endian) seeded by a per-request <em>salt hash</em>, chained into a
 * sequence hash that covers the whole prefix; the sequence hash is the block's key.
 *
 * <p>{@code dynamo:kvbm_v1}: KVBM's vLLM connector ({@code KvbmRequest::new} in
 * {@code lib/bindings/kvbm/src/block_manager/vllm/request.rs}, {@code TokenBlock::from_chunk} in
 * {@code lib/llm/src/tokens.rs}):
 * <pre>
 *   salt_hash = xxh3_64(serde_json({"salt": cache_salt, "lora_name": lora_name}), seed 0)
 *   block[i]  = xxh3_64(u32-LE tokens of block i, seed salt_hash)
 *   seq[0]    = block[0];  seq[i] = xxh3_64(u64-LE seq[i-1] ‖ u64-LE block[i], seed salt_hash)
 * </pre>
 * The JSON is compact, in that field order, with absent (null) fields left out ({@code {}} when both
 * are); an empty string is present, as {@code Some("")} is to serde ({@code {"salt":""}}).
 *
 * <p>{@code dynamo:router}: the KV router, KVBM v2 and the event consolidator ({@code
 * compute_salt_hash} in {@code lib/kv-hashing/src/salt.rs}, {@code compute_block_hash_for_seq} and
 * {@code compute_next_seq_hash} in {@code lib/kv-router/src/protocols.rs}):
 * <pre>
 *   salt_hash = 1337 + xxh3_64(lora_name, seed 0) + xxh3_64(cache_salt, seed 1)   (wrapping; a term only when
 *                                                                                   that string is non-empty)
 *   block[i]  = xxh3_64(u32-LE tokens of block i, seed salt_hash)
 *   seq[0]    = block[0];  seq[i] = xxh3_64(u64-LE seq[i-1] ‖ u64-LE block[i], seed 1337)
 * </pre>
 *
 * <p>A namespace may instead fix the salt hash for every request (its seed), as a Dynamo component
 * given a {@code SaltHash} directly does; requests must then carry no LoRA name or cache salt. Neither
 * scheme has a place for further keys here: {@link ExtraKeys#more()}, multimodal items and
 * prompt-embedding hashes are refused. Hashes are {@link BlockHash#ofLong big-endian} 8-byte values,
 * whose hex reads as Dynamo prints the {@code u64}. XXH3 comes from zero-allocation-hashing ({@link
 * LongHashFunction#xx3(long)}), which reads {@code int[]} and {@code long[]} in native order; on a
 * big-endian CPU the tokens are first laid out little-endian.
 */
public final class Xxh3Hasher implements BlockHasher {

    /** The router's chaining seed and the base of its salt hash ({@code CHAIN_XXH3_SEED}). */
    public static final long ROUTER_SEED = 1337;

    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;
    private static final LongHashFunction ROUTER_CHAIN = LongHashFunction.xx3(ROUTER_SEED);

    private final HashScheme scheme;
    private final LongHashFunction fixed;
    private final long fixedSaltHash;

    /** Derives the salt hash per request from its LoRA name and cache salt, as Dynamo does. */
    public Xxh3Hasher(HashScheme scheme) {
        this.scheme = requireDynamo(scheme);
        this.fixed = null;
        this.fixedSaltHash = 0;
    }

    /**
     * Uses {@code saltHash} for every request, as Dynamo's {@code TokenBlockSequence::new(tokens,
     * block_size, Some(salt_hash))} does; requests must then carry no LoRA name and no cache salt.
     */
    public Xxh3Hasher(HashScheme scheme, long saltHash) {
        this.scheme = requireDynamo(scheme);
        this.fixed = LongHashFunction.xx3(saltHash);
        this.fixedSaltHash = saltHash;
    }

    private static HashScheme requireDynamo(HashScheme scheme) {
        if (scheme != HashScheme.KVBM_V1 && scheme != HashScheme.DYNAMO_ROUTER) {
            throw new IllegalArgumentException(scheme + " is not a Dynamo scheme");
        }
        return scheme;
    }

    @Override
    public HashScheme scheme() {
        return scheme;
    }

    /** Dynamo's salt hash under {@code scheme} of a request with this cache salt and LoRA name (either may be null). */
    public static long saltHash(HashScheme scheme, String cacheSalt, String loraName) {
        if (requireDynamo(scheme) == HashScheme.KVBM_V1) {
            return LongHashFunction.xx3(0).hashBytes(saltPayload(cacheSalt, loraName));
        }
        long seed = ROUTER_SEED;
        if (!isEmpty(loraName)) {
            seed += LongHashFunction.xx3(0).hashBytes(loraName.getBytes(StandardCharsets.UTF_8));
        }
        if (!isEmpty(cacheSalt)) {
            seed += LongHashFunction.xx3(1).hashBytes(cacheSalt.getBytes(StandardCharsets.UTF_8));
        }
        return seed;
    }

    @Override
    public List<BlockHash> hashPrompt(int[] tokenIds, int blockSize, ExtraKeys extra) {
        HashInputs.checkBlockSize(blockSize);
        LongHashFunction xxh3 = functionFor(extra);
        LongHashFunction chain = scheme == HashScheme.DYNAMO_ROUTER ? ROUTER_CHAIN : xxh3;
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
            seq = b == 0 ? block : sequenceHash(chain, pair, seq, block);
            hashes[b] = BlockHash.ofLong(seq);
        }
        return Collections.unmodifiableList(Arrays.asList(hashes));
    }

    private LongHashFunction functionFor(ExtraKeys extra) {
        ExtraKeys keys = extra == null ? ExtraKeys.NONE : extra;
        if (!keys.more().isEmpty()) {
            throw new HashInputException(
                    "more",
                    scheme + " hashes only the LoRA name and cache salt besides the tokens; got "
                            + keys.more().size() + " further extra keys");
        }
        if (!keys.multimodal().isEmpty()) {
            throw new HashInputException(
                    "multimodal", scheme + ": kvstore computes multimodal keys for the vllm:* schemes only");
        }
        if (!keys.promptEmbeds().isEmpty()) {
            throw new HashInputException(
                    "promptEmbeds", scheme + ": prompt embeddings are hashed by the vllm:* schemes only");
        }
        if (fixed == null) {
            return LongHashFunction.xx3(saltHash(scheme, keys.cacheSalt(), keys.loraName()));
        }
        if (carries(keys.loraName()) || carries(keys.cacheSalt())) {
            throw new HashInputException(
                    carries(keys.loraName()) ? "lora" : "cacheSalt",
                    "this namespace uses the fixed salt hash " + Long.toUnsignedString(fixedSaltHash)
                            + ", so requests cannot carry a LoRA name or cache salt; declare it without a seed instead");
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

    /** KVBM v1's salt payload as serde_json writes it: compact, fields in order, null ones omitted. */
    static byte[] saltPayload(String cacheSalt, String loraName) {
        StringBuilder json = new StringBuilder(32).append('{');
        if (cacheSalt != null) {
            json.append("\"salt\":");
            jsonString(json, cacheSalt);
        }
        if (loraName != null) {
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

    /** Whether a request's LoRA name or salt counts under this scheme: KVBM v1 hashes {@code ""}, the router drops it. */
    private boolean carries(String s) {
        return scheme == HashScheme.KVBM_V1 ? s != null : !isEmpty(s);
    }

    private static boolean isEmpty(String s) {
        return s == null || s.isEmpty();
    }

    /** Parses a namespace's fixed salt hash: an unsigned decimal or {@code 0x}-prefixed hex 64-bit number. */
    static long parseSeed(HashScheme scheme, String seed) {
        String s = seed.strip();
        try {
            if (s.startsWith("0x") || s.startsWith("0X")) {
                return Long.parseUnsignedLong(s.substring(2), 16);
            }
            return Long.parseUnsignedLong(s);
        } catch (NumberFormatException e) {
            throw new HashInputException(
                    "seed",
                    scheme + " takes no seed (derived per request) or a fixed unsigned 64-bit salt hash, decimal or"
                            + " 0x hex; got '" + seed + "'");
        }
    }
}
