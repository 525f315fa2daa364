package io.kvstore.service.events;

/**
 * One event of vLLM's {@code KVEventBatch}, as kvstore emits it: one block per store or remove, no token
 * ids (kvstore keeps hashes, not tokens), no LoRA fields.
 */
public sealed interface KvEvent {

    /**
     * A copy of a block is now readable in the tier named by {@code medium}.
     *
     * @param hash vLLM's integer form of the block hash: the last 8 bytes, unsigned big-endian
     * @param parent the parent's hash in the same form, or null for a first block
     * @param blockSize tokens per block from the namespace declaration, 0 when undeclared
     */
    record BlockStored(long hash, Long parent, int blockSize, String medium) implements KvEvent {}

    /** The copy of a block in the tier named by {@code medium} is gone. */
    record BlockRemoved(long hash, String medium) implements KvEvent {}

    /** Forget everything this publisher said before: sent after changes were dropped. */
    record AllBlocksCleared() implements KvEvent {}
}
