package io.kvstore.block;

import java.util.Objects;

/**
 * A block's identity: the namespace (model + layout + tenant) and the block's chained hash. Blocks
 * of different namespaces never compare equal, even when their hashes do.
 */
public record BlockKey(String namespace, BlockHash hash) {

    public BlockKey {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(hash, "hash");
    }

    @Override
    public String toString() {
        return namespace + "/" + hash.hex();
    }
}
