package io.kvstore.engine;

import io.kvstore.block.TierId;

/** A tier as operators see it: provider, capacity and use, watermarks and policy. */
public record TierStats(
        TierId tier,
        String provider,
        boolean emulated,
        long capacityBytes,
        long usedBytes,
        int blocks,
        TierSettings settings) {}
