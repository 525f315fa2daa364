package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import java.time.Instant;
import java.util.List;

/** Blocks held in place for one engine until released or until {@code expiresAt}. */
public record Lease(String id, List<BlockKey> blocks, Instant expiresAt) {

    public Lease {
        blocks = List.copyOf(blocks);
    }
}
