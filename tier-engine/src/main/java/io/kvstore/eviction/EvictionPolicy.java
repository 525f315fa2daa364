package io.kvstore.eviction;

import io.kvstore.block.BlockKey;
import java.util.List;
import java.util.function.Predicate;

/**
 * The order in which one tier gives up its blocks. A policy only orders keys; it never frees memory.
 * Not thread-safe: {@link TierPolicy} serialises every call.
 */
public sealed interface EvictionPolicy permits LruPolicy, LfuPolicy, WTinyLfuPolicy, PrefixAwarePolicy {

    EvictionPolicyKind kind();

    /** A block became resident in the tier; {@code parent} is its parent's key, or null for a first block. */
    void onInsert(BlockKey key, BlockKey parent);

    /** A resident block was read or matched by a lookup. Unknown keys are ignored. */
    void onAccess(BlockKey key);

    /** A block left the tier. Unknown keys are ignored. */
    void onRemove(BlockKey key);

    /**
     * The next block to evict: the first in this policy's order for which {@code evictable} holds, or
     * null when there is none. The block stays tracked until {@link #onRemove}.
     */
    default BlockKey nextVictim(Predicate<BlockKey> evictable) {
        return nextVictim(evictable, key -> false);
    }

    /**
     * As {@link #nextVictim(Predicate)}; a block passed over for which {@code held} holds (pinned or
     * leased: it stays unevictable until its holder lets go) is also set aside, out of the order, until
     * {@link #unpark}, so that later calls do not walk past it again. A block set aside is still tracked:
     * it is accessed, removed and listed as any other.
     */
    BlockKey nextVictim(Predicate<BlockKey> evictable, Predicate<BlockKey> held);

    /**
     * As {@link #nextVictim(Predicate, Predicate)}, but the search gives up, returning null, at the first block
     * {@code evictable} refused for which {@code stop} holds (asked before {@code held}): a look for a particular
     * victim that must not walk the whole tier. The block it stops at is not offered as a victim; a policy that
     * marks the block it returns overrides this.
     */
    default BlockKey nextVictim(Predicate<BlockKey> evictable, Predicate<BlockKey> held, Predicate<BlockKey> stop) {
        boolean[] stopped = {false};
        BlockKey found = nextVictim(key -> evictable.test(key) || (stopped[0] = stop.test(key)), held);
        return stopped[0] ? null : found;
    }

    /**
     * A block set aside by {@link #nextVictim(Predicate, Predicate)} may be evictable again: it rejoins the
     * order where its own state (its last access, its count) puts it. Other keys are ignored.
     */
    void unpark(BlockKey key);

    /** Every tracked block, the one to evict first at the head; used to carry state across a switch. */
    List<BlockKey> coldestFirst();

    int size();
}
