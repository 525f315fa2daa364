package io.kvstore.eviction;

import io.kvstore.block.BlockKey;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.ToIntFunction;
import java.util.stream.Collectors;

/** The eviction policies a tier can run; switchable at run time without losing a block. */
public enum EvictionPolicyKind {
    /** Least recently used first. */
    LRU,
    /** Least frequently used first, with dynamic aging (LFU-DA) so old popularity fades. */
    LFU,
    /** Window TinyLFU, run by Caffeine itself: an adaptive LRU window before a frequency-gated SLRU. */
    W_TINYLFU,
    /** Leaves first: never a block whose descendant is resident in the same tier; oldest leaf first. */
    PREFIX_AWARE;

    /** Parses a name case-insensitively, with the allowed names in the error. */
    public static EvictionPolicyKind parse(String name) {
        try {
            return valueOf(name.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalArgumentException("unknown eviction policy '" + name + "'; expected one of "
                    + Arrays.stream(values()).map(Enum::name).collect(Collectors.joining(", ")));
        }
    }

    /**
     * A new, empty policy of this kind for a tier of {@code capacityBytes}; {@code bytesOf} gives a resident
     * block's length (policies that weigh blocks by size use it).
     */
    public EvictionPolicy create(long capacityBytes, ToIntFunction<BlockKey> bytesOf) {
        return switch (this) {
            case LRU -> new LruPolicy();
            case LFU -> new LfuPolicy();
            case W_TINYLFU -> new WTinyLfuPolicy(capacityBytes, bytesOf);
            case PREFIX_AWARE -> new PrefixAwarePolicy();
        };
    }
}
