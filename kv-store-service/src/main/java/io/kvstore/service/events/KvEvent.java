package io.kvstore.service.events;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One event of vLLM's {@code KVEventBatch}, as kvstore emits it: one block per store or remove, no token
 * ids (kvstore keeps hashes, not tokens).
 */
public sealed interface KvEvent {

    /**
     * A copy of a block is now readable in the tier named by {@code medium}.
     *
     * @param hash vLLM's integer form of the block hash: the last 8 bytes, unsigned big-endian
     * @param parent the parent's hash in the same form, or null for a first block
     * @param blockSize tokens per block from the namespace declaration, 0 when undeclared
     * @param loraName the LoRA adapter the namespace declares, or null
     * @param extraKeys the block's entry of vLLM's {@code extra_keys} (the LoRA name, then the namespace's
     *     declared extra keys), or null when the namespace declares neither
     */
    record BlockStored(
            long hash,
            @Nullable Long parent,
            int blockSize,
            String medium,
            @Nullable String loraName,
            @Nullable List<Object> extraKeys)
            implements KvEvent {

        BlockStored(long hash, @Nullable Long parent, int blockSize, String medium) {
            this(hash, parent, blockSize, medium, null, null);
        }
    }

    /** The copy of a block in the tier named by {@code medium} is gone. */
    record BlockRemoved(long hash, String medium) implements KvEvent {}

    /** Forget everything this publisher said before: sent after changes were dropped. */
    record AllBlocksCleared() implements KvEvent {}
}
