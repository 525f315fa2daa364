package io.kvstore.engine;

import io.kvstore.block.TierId;
import org.jspecify.annotations.Nullable;

/**
 * A tier as operators see it: provider, capacity and use, watermarks and policy, and whether it is
 * degraded.
 *
 * @param usableBytes what the tier can hold now: {@code capacityBytes} less what its storage failed to
 *     provide (a full filesystem under the NVMe tier)
 * @param outOfSpaceErrors writes the storage below refused for want of space since start-up
 * @param degraded why the tier is degraded (shrunk by a full filesystem, demotion out of it failing), or
 *     null while it is not
 */
public record TierStats(
        TierId tier,
        String provider,
        boolean emulated,
        long capacityBytes,
        long usableBytes,
        long usedBytes,
        int blocks,
        long outOfSpaceErrors,
        @Nullable String degraded,
        TierSettings settings) {}
