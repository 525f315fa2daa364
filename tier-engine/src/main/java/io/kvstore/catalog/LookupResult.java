package io.kvstore.catalog;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.util.List;

/**
 * The answer to "how much of this prompt is cached": the leading blocks that are resident, in order,
 * each with the fastest tier holding it.
 */
public record LookupResult(List<BlockKey> blocks, List<TierId> tiers) {

    public LookupResult {
        blocks = List.copyOf(blocks);
        tiers = List.copyOf(tiers);
    }

    public int matchedBlocks() {
        return blocks.size();
    }
}
