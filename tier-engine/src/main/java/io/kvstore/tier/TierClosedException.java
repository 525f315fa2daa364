package io.kvstore.tier;

/**
 * A call reached a tier that is closed or closing (the engine is shutting down): nothing was read or written. An
 * {@link IllegalStateException}, since no caller can do better than give up; the service answers it with 503.
 */
public final class TierClosedException extends IllegalStateException {

    /** @param tier the tier as operators name it ("DRAM", "NVMe") */
    public TierClosedException(String tier) {
        super(tier + " tier closed");
    }
}
