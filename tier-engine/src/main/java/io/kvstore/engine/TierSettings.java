package io.kvstore.engine;

import io.kvstore.eviction.EvictionPolicyKind;

/**
 * How one tier is run: its eviction policy, its watermarks (fractions of capacity: above {@code high}
 * blocks move down until {@code low}) and whether a hit on a slower tier copies the block up into this one.
 */
public record TierSettings(EvictionPolicyKind policy, double highWatermark, double lowWatermark, boolean promoteOnHit) {

    public static final TierSettings DEFAULT = new TierSettings(EvictionPolicyKind.LRU, 0.90, 0.80, false);

    public TierSettings {
        if (policy == null) {
            throw new IllegalArgumentException("eviction policy is required");
        }
        if (!(lowWatermark > 0 && lowWatermark < highWatermark && highWatermark <= 1.0)) {
            throw new IllegalArgumentException(
                    "watermarks must satisfy 0 < low < high <= 1, got low " + lowWatermark + ", high " + highWatermark);
        }
    }

    public TierSettings withPolicy(EvictionPolicyKind kind) {
        return new TierSettings(kind, highWatermark, lowWatermark, promoteOnHit);
    }

    public TierSettings withWatermarks(double high, double low) {
        return new TierSettings(policy, high, low, promoteOnHit);
    }
}
