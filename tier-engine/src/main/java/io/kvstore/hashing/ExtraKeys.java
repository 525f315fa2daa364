package io.kvstore.hashing;

import java.util.ArrayList;
import java.util.List;

/**
 * What besides the tokens makes two prefixes different, following vLLM: the LoRA adapter's name
 * (on every block), further keys such as multimodal input hashes (strings or integers, on every block),
 * and the cache salt (on the first block only, so tenants with different salts never share a prefix).
 */
public record ExtraKeys(String loraName, String cacheSalt, List<Object> more) {

    public static final ExtraKeys NONE = new ExtraKeys(null, null, List.of());

    public ExtraKeys {
        more = more == null ? List.of() : List.copyOf(more);
        for (Object key : more) {
            if (!(key instanceof String) && !(key instanceof Long) && !(key instanceof Integer)) {
                throw new IllegalArgumentException("extra keys are strings or integers, got " + key.getClass().getSimpleName());
            }
        }
    }

    /** The keys of block {@code blockIndex} in vLLM's order (LoRA, more, salt), or null when there are none. */
    List<Object> forBlock(int blockIndex) {
        List<Object> keys = new ArrayList<>(2 + more.size());
        if (loraName != null) {
            keys.add(loraName);
        }
        keys.addAll(more);
        if (blockIndex == 0 && cacheSalt != null) {
            keys.add(cacheSalt);
        }
        return keys.isEmpty() ? null : keys;
    }

    boolean isEmpty() {
        return loraName == null && cacheSalt == null && more.isEmpty();
    }
}
