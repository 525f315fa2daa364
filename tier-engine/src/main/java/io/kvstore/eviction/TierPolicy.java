package io.kvstore.eviction;

import io.kvstore.block.BlockKey;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;
import org.jspecify.annotations.Nullable;

/**
 * One tier's eviction policy behind one lock, with reads kept off that lock.
 *
 * <p>Inserts, removals and victim choice take the lock; they happen beside a block copy that costs
 * far more. Accesses are the hot path (every lookup hit and read), so they never wait: an access is
 * applied at once when the lock is free and otherwise queued in a bounded buffer that the next lock
 * holder drains; when the buffer is full the access is dropped, as Caffeine drops reads under
 * contention, which only makes the policy's order slightly less exact. The policy can be replaced at
 * run time: the new one is fed every resident block, coldest first, so nothing is lost or reordered
 * more than the new policy's own rules require.
 *
 * <p>Pinned and leased blocks are set aside by the policy the first time a victim search passes them, so
 * a tier full of held blocks costs a store one walk past them, not one per eviction; when a pin or lease
 * ends ({@link #holdsEnded}) they rejoin the order where they belong.
 */
public final class TierPolicy {

    private static final int ACCESS_BUFFER_LIMIT = 16_384;

    private final ReentrantLock lock = new ReentrantLock();
    private final ConcurrentLinkedQueue<BlockKey> pendingAccesses = new ConcurrentLinkedQueue<>();
    private final AtomicInteger pendingCount = new AtomicInteger();
    private final long capacityBytes;
    private final Function<BlockKey, @Nullable BlockKey> parentOf;
    private final ToIntFunction<BlockKey> bytesOf;
    private final Predicate<BlockKey> held;
    /** {@link #held} as victim searches ask it: noting first that a search got as far as asking. */
    private final Predicate<BlockKey> heldAsked;
    /**
     * Set before a victim search first asks whether a block is held (so before it can set one aside): until
     * then {@link #holdsEnded} has nothing to give back and skips the lock, as a tier never full does.
     */
    private volatile boolean askedHeld;

    private volatile EvictionPolicy policy;
    /** Blocks victim searches have asked {@code evictable} about, guarded by {@link #lock}. */
    private long candidatesVisited;

    /**
     * @param capacityBytes the tier's capacity, for policies that weigh blocks by size
     * @param parentOf the parent key of a resident block (null for a first block), used on a switch
     * @param bytesOf a resident block's length
     * @param held whether a block is pinned or leased now: such a block is set aside until {@link
     *     #holdsEnded} reports it
     */
    public TierPolicy(
            EvictionPolicyKind kind,
            long capacityBytes,
            Function<BlockKey, @Nullable BlockKey> parentOf,
            ToIntFunction<BlockKey> bytesOf,
            Predicate<BlockKey> held) {
        this.capacityBytes = capacityBytes;
        this.parentOf = parentOf;
        this.bytesOf = bytesOf;
        this.held = held;
        this.heldAsked = key -> {
            if (!askedHeld) {
                askedHeld = true;
            }
            return held.test(key);
        };
        this.policy = kind.create(capacityBytes, bytesOf);
    }

    public EvictionPolicyKind kind() {
        return policy.kind();
    }

    public void recordAccess(BlockKey key) {
        if (lock.tryLock()) {
            try {
                drain();
                policy.onAccess(key);
            } finally {
                lock.unlock();
            }
        } else if (pendingCount.incrementAndGet() <= ACCESS_BUFFER_LIMIT) {
            pendingAccesses.add(key);
        } else {
            pendingCount.decrementAndGet();
        }
    }

    /**
     * Records an access to each of {@code keys} (a lookup's matched prefix), in order, under one lock
     * acquisition instead of one per block; queued like single accesses when the lock is busy.
     */
    public void recordAccesses(List<BlockKey> keys) {
        if (keys.isEmpty()) {
            return;
        }
        if (lock.tryLock()) {
            try {
                drain();
                EvictionPolicy p = policy;
                for (BlockKey key : keys) {
                    p.onAccess(key);
                }
            } finally {
                lock.unlock();
            }
        } else {
            for (BlockKey key : keys) {
                if (pendingCount.incrementAndGet() <= ACCESS_BUFFER_LIMIT) {
                    pendingAccesses.add(key);
                } else {
                    pendingCount.decrementAndGet();
                    return;
                }
            }
        }
    }

    public void onInsert(BlockKey key, BlockKey parent) {
        lock.lock();
        try {
            drain();
            policy.onInsert(key, parent);
        } finally {
            lock.unlock();
        }
    }

    /**
     * As {@link #onInsert}, unless the copy is gone by the time the lock is taken: a removal that dropped it
     * after it was published and before this call has made its own {@link #onRemove} already (inserting
     * now would track a block the tier does not hold, for good) or waits for this lock (and finds nothing).
     * While the copy is still there when asked, any later removal drops it first and calls {@link
     * #onRemove} after this insert.
     *
     * @param resident whether the copy is still published in this tier; asked under the lock
     */
    public void onInsertIfResident(BlockKey key, BlockKey parent, BooleanSupplier resident) {
        lock.lock();
        try {
            drain();
            if (resident.getAsBoolean()) {
                policy.onInsert(key, parent);
            }
        } finally {
            lock.unlock();
        }
    }

    public void onRemove(BlockKey key) {
        lock.lock();
        try {
            drain();
            policy.onRemove(key);
        } finally {
            lock.unlock();
        }
    }

    /** The next block to evict that passes {@code evictable}, or null. */
    public BlockKey nextVictim(Predicate<BlockKey> evictable) {
        return nextVictim(evictable, key -> false);
    }

    /**
     * The next block to evict that passes {@code evictable}, or null, also when the search comes first to a block
     * {@code evictable} refused for which {@code stop} holds: it gives up there, offering no victim ({@link
     * EvictionPolicy#nextVictim(Predicate, Predicate, Predicate)}).
     */
    public BlockKey nextVictim(Predicate<BlockKey> evictable, Predicate<BlockKey> stop) {
        lock.lock();
        try {
            drain();
            return policy.nextVictim(
                    key -> {
                        candidatesVisited++;
                        return evictable.test(key);
                    },
                    heldAsked,
                    stop);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Whether a victim search would come to a block for which {@code which} holds: it walks the order as {@link
     * #nextVictim} does (setting aside the held blocks it passes) and stops at the first such block, but offers
     * no victim, so a policy that marks what it offers (LFU ages when an offered block leaves) marks nothing. For
     * a look at the tier, such as whether a block is held only briefly, after which nothing is evicted.
     */
    public boolean anyInOrder(Predicate<BlockKey> which) {
        boolean[] found = {false};
        nextVictim(key -> false, key -> found[0] = which.test(key));
        return found[0];
    }

    /**
     * How many blocks victim searches have looked at since this tier started, over every policy it ran: what
     * choosing victims cost (for diagnostics and tests that bound it).
     */
    public long candidatesVisited() {
        lock.lock();
        try {
            return candidatesVisited;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Pins or leases on {@code keys} ended: each that was set aside and is held no more may be evicted again.
     * Called after the hold was dropped, and asks whether each block is still held before it takes the lock,
     * so a search that set a block aside as it was being released is either followed by this call or saw
     * the block unheld.
     */
    public void holdsEnded(List<BlockKey> keys) {
        if (!askedHeld) {
            return; // nothing was ever set aside (the flag is written before a search reads a hold)
        }
        List<BlockKey> free = new ArrayList<>(keys.size());
        for (BlockKey key : keys) {
            if (!held.test(key)) {
                free.add(key);
            }
        }
        if (free.isEmpty()) {
            return;
        }
        lock.lock();
        try {
            drain();
            for (BlockKey key : free) {
                policy.unpark(key);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Replaces the policy, carrying every tracked block over coldest first. */
    public void switchTo(EvictionPolicyKind kind) {
        lock.lock();
        try {
            drain();
            if (policy.kind() == kind) {
                return;
            }
            EvictionPolicy next = kind.create(capacityBytes, bytesOf);
            for (BlockKey key : policy.coldestFirst()) {
                next.onInsert(key, parentOf.apply(key));
            }
            policy = next;
        } finally {
            lock.unlock();
        }
    }

    public int size() {
        lock.lock();
        try {
            return policy.size();
        } finally {
            lock.unlock();
        }
    }

    private void drain() {
        BlockKey key;
        while ((key = pendingAccesses.poll()) != null) {
            pendingCount.decrementAndGet();
            policy.onAccess(key);
        }
    }
}
