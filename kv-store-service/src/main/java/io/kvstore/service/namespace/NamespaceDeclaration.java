package io.kvstore.service.namespace;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.hashing.HashScheme;
import java.util.List;

/**
 * A namespace as clients declare it and as it is kept on disk ({@code PUT /v1/namespaces/{ns}} body,
 * {@code namespaces.json}). {@code lora} and {@code extraKeys} (optional) name what the engine hashed into every
 * block beside the tokens; KV events carry them ({@code docs/events.md}).
 */
public record NamespaceDeclaration(
        String model,
        Layout layout,
        String hashScheme,
        String hashSeed,
        String durability,
        String tenant,
        @JsonInclude(JsonInclude.Include.NON_NULL) String lora,
        @JsonInclude(JsonInclude.Include.NON_NULL) List<String> extraKeys) {

    /** {@code durability} values: acknowledged once in a tier (default), or once on the durable tier. */
    public static final String WRITE_BACK = "write-back";

    public static final String WRITE_THROUGH = "write-through";

    /** The KV layout of one block. */
    public record Layout(Integer layers, Integer kvHeads, Integer headDim, String dtype, Integer blockSize) {}

    /** Validates the declaration, naming the first field at fault. */
    public NamespaceSpec toSpec() {
        if (layout == null) {
            throw new InvalidNamespaceException("layout", "layout is required");
        }
        Dtype dtype;
        try {
            dtype = Dtype.parse(layout.dtype());
        } catch (IllegalArgumentException e) {
            throw new InvalidNamespaceException("layout.dtype", "layout.dtype: " + e.getMessage());
        }
        HashScheme scheme;
        try {
            scheme = HashScheme.parse(hashScheme == null ? "sha256_cbor" : hashScheme);
        } catch (IllegalArgumentException e) {
            throw new InvalidNamespaceException("hashScheme", "hashScheme: " + e.getMessage());
        }
        boolean writeThrough;
        if (durability == null || durability.equals(WRITE_BACK)) {
            writeThrough = false;
        } else if (durability.equals(WRITE_THROUGH)) {
            writeThrough = true;
        } else {
            throw new InvalidNamespaceException(
                    "durability", "durability must be 'write-back' or 'write-through', got '" + durability + "'");
        }
        return new NamespaceSpec(
                model,
                required(layout.layers(), "layout.layers"),
                required(layout.kvHeads(), "layout.kvHeads"),
                required(layout.headDim(), "layout.headDim"),
                dtype,
                layout.blockSize() == null ? 16 : layout.blockSize(),
                scheme,
                hashSeed,
                writeThrough,
                lora,
                extraKeys);
    }

    /** The declaration of a validated spec, with names in canonical form. */
    public static NamespaceDeclaration of(NamespaceSpec spec) {
        return of(spec, null);
    }

    /** The declaration of a validated spec as kept on disk, with the tenant that owns it. */
    public static NamespaceDeclaration of(NamespaceSpec spec, String tenant) {
        return new NamespaceDeclaration(
                spec.model(),
                new Layout(
                        spec.layers(),
                        spec.kvHeads(),
                        spec.headDim(),
                        spec.dtype().wireName(),
                        spec.blockSize()),
                spec.hashScheme().wireName(),
                spec.hashSeed(),
                spec.writeThrough() ? WRITE_THROUGH : WRITE_BACK,
                tenant,
                spec.lora(),
                spec.extraKeys());
    }

    private static int required(Integer value, String field) {
        if (value == null) {
            throw new InvalidNamespaceException(field, field + " is required");
        }
        return value;
    }
}
