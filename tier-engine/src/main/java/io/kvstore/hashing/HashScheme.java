package io.kvstore.hashing;

import java.util.ArrayList;
import java.util.List;

/**
 * The block-hash schemes a namespace can use, named as the engines name them: {@code vllm:<algo>} for
 * vLLM's {@code --prefix-caching-hash-algo <algo>}, {@code dynamo:kvbm_v1} for Dynamo KVBM's vLLM
 * connector and {@code dynamo:router} for Dynamo's KV router, KVBM v2 and event consolidator. A
 * namespace picks one so that the keys kvstore computes from token ids equal the keys its engine
 * computes itself. The names kvstore used before ({@code sha256_cbor}, {@code xxh3}) are accepted as
 * aliases.
 */
public enum HashScheme {
    /** vLLM's default: pickle (protocol 5) of (parent, tokens, extra keys), SHA-256; 32-byte hashes. */
    SHA256("vllm:sha256", 32),
    /** vLLM: canonical CBOR of (parent, tokens, extra keys), SHA-256; 32-byte hashes. */
    SHA256_CBOR("vllm:sha256_cbor", 32, "sha256_cbor"),
    /** vLLM: pickle (protocol 5), XXH3-128; 16-byte hashes. */
    XXHASH("vllm:xxhash", 16),
    /** vLLM: canonical CBOR, XXH3-128; 16-byte hashes. */
    XXHASH_CBOR("vllm:xxhash_cbor", 16),
    /** Dynamo KVBM v1: XXH3-64 seeded by a hash of the salt JSON, chained with that seed; 8-byte hashes. */
    KVBM_V1("dynamo:kvbm_v1", 8, "xxh3"),
    /** Dynamo's router (and KVBM v2): XXH3-64 seeded by 1337 plus LoRA and salt hashes, chained with 1337. */
    DYNAMO_ROUTER("dynamo:router", 8);

    private final String wireName;
    private final int hashLength;
    private final String alias;

    HashScheme(String wireName, int hashLength) {
        this(wireName, hashLength, null);
    }

    HashScheme(String wireName, int hashLength, String alias) {
        this.wireName = wireName;
        this.hashLength = hashLength;
        this.alias = alias;
    }

    /** The name used in configuration and on the wire. */
    public String wireName() {
        return wireName;
    }

    /** The length in bytes of the hashes this scheme computes. */
    public int hashLength() {
        return hashLength;
    }

    /** Whether the scheme is one of vLLM's, whose seed is {@code PYTHONHASHSEED}. */
    public boolean isVllm() {
        return wireName.startsWith("vllm:");
    }

    /**
     * The scheme named {@code name}: a wire name or an alias, surrounding blanks ignored.
     *
     * @throws IllegalArgumentException naming the value and the allowed names
     */
    public static HashScheme parse(String name) {
        if (name != null) {
            String trimmed = name.strip();
            for (HashScheme scheme : values()) {
                if (scheme.wireName.equals(trimmed) || trimmed.equals(scheme.alias)) {
                    return scheme;
                }
            }
        }
        throw new IllegalArgumentException(
                "unknown hash scheme '" + name + "'; allowed: " + String.join(", ", names()));
    }

    /** Every accepted name, wire names first. */
    public static List<String> names() {
        List<String> names = new ArrayList<>();
        for (HashScheme scheme : values()) {
            names.add(scheme.wireName);
        }
        for (HashScheme scheme : values()) {
            if (scheme.alias != null) {
                names.add(scheme.alias + " (= " + scheme.wireName + ")");
            }
        }
        return names;
    }

    @Override
    public String toString() {
        return wireName;
    }
}
