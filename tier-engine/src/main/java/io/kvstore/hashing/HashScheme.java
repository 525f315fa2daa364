package io.kvstore.hashing;

import java.util.Arrays;
import java.util.stream.Collectors;

/** The block-hash schemes a namespace can use, by their wire names. */
public enum HashScheme {
    /** vLLM's: SHA-256 of canonical CBOR of (parent, token ids, extra keys); 32-byte hashes. */
    SHA256_CBOR("sha256_cbor"),
    /** Dynamo KVBM's: chained xxh3-64; 8-byte hashes. */
    XXH3("xxh3");

    private final String wireName;

    HashScheme(String wireName) {
        this.wireName = wireName;
    }

    public String wireName() {
        return wireName;
    }

    /** Parses a wire name, listing the valid ones in the error. */
    public static HashScheme parse(String name) {
        for (HashScheme scheme : values()) {
            if (scheme.wireName.equalsIgnoreCase(name == null ? "" : name.trim())) {
                return scheme;
            }
        }
        throw new IllegalArgumentException("unknown hash scheme '" + name + "'; expected one of "
                + Arrays.stream(values()).map(HashScheme::wireName).collect(Collectors.joining(", ")));
    }
}
