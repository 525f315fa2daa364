package io.kvstore.hashing;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The block-hash schemes a namespace can use, by their wire names: {@code sha256_cbor} (vLLM's
 * prefix-cache hash) and {@code xxh3} (Dynamo KVBM's sequence hash). A namespace picks one so that
 * the keys kvstore computes from token ids equal the keys its engine computes itself.
 */
public enum HashScheme {
    /** SHA-256 over canonical CBOR of (parent, tokens, extra keys); 32-byte hashes. */
    SHA256_CBOR("sha256_cbor", 32),
    /** XXH3-64 block hashes chained into sequence hashes; 8-byte hashes. */
    XXH3("xxh3", 8);

    private final String wireName;
    private final int hashLength;

    HashScheme(String wireName, int hashLength) {
        this.wireName = wireName;
        this.hashLength = hashLength;
    }

    /** The name used in configuration and on the wire. */
    public String wireName() {
        return wireName;
    }

    /** The length in bytes of the hashes this scheme computes. */
    public int hashLength() {
        return hashLength;
    }

    /**
     * The scheme named {@code name} (exact wire name, surrounding blanks ignored).
     *
     * @throws IllegalArgumentException naming the value and the allowed names
     */
    public static HashScheme parse(String name) {
        if (name != null) {
            String trimmed = name.strip();
            for (HashScheme scheme : values()) {
                if (scheme.wireName.equals(trimmed)) {
                    return scheme;
                }
            }
        }
        throw new IllegalArgumentException("unknown hash scheme '" + name + "'; allowed: "
                + Arrays.stream(values()).map(HashScheme::wireName).collect(Collectors.joining(", ")));
    }

    @Override
    public String toString() {
        return wireName;
    }
}
