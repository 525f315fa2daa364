package io.kvstore.service.events;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * The bounded queue between the engine's storing threads and the publisher thread: a fixed ring of slots,
 * many producers, one consumer, lock-free. Offering a change costs one compare-and-set and no allocation
 * (no node, no change object, no separate counter): a storing thread claims the next slot, writes the
 * change's fields into it and marks the slot filled; the publisher reads filled slots in order. A full ring
 * refuses the change, so the storing thread never waits.
 *
 * <p>A slot holds what the event needs, not the block's objects: the namespace and the wire form of the hash
 * and parent (vLLM's integer, the hash's last 8 bytes), taken by the storing thread while they are in its
 * cache. The publisher then reads four arrays in order instead of chasing each block's key and hash objects
 * across CPUs.
 *
 * <p>The namespace is the slot's only reference, and it is written only when the slot holds another one: a
 * reference stored into this long-lived array costs the storing thread the garbage collector's write barrier
 * (G1: a card check behind a memory fence; generational ZGC: a remembered-set slow path on the first store
 * into each slot after every young collection), while with a few namespaces the slot a lap later mostly
 * holds the same string already. The other arrays hold primitives, which need no barrier.
 */
final class ChangeRing {

    /** Receives the changes taken off the ring, in the order they were offered. */
    @FunctionalInterface
    interface Sink {
        /**
         * @param hash the block hash's wire form ({@link BlockHash#lastLong()})
         * @param parent the parent's wire form, meaningful only when {@code hasParent}
         */
        void accept(TierId tier, String namespace, long hash, boolean hasParent, long parent, boolean stored);
    }

    /**
     * The read and claim positions live in one array, 128 bytes apart, so the publisher's head and the storing
     * threads' tail never share a cache line (nor an adjacent-line prefetch pair).
     */
    private static final VarHandle POSITION = MethodHandles.arrayElementVarHandle(long[].class);

    private static final int HEAD = 16;
    private static final int TAIL = 32;
    private static final VarHandle FILLED = MethodHandles.arrayElementVarHandle(long[].class);
    private static final TierId[] TIERS = TierId.values();
    private static final int STORED = 0x80;
    private static final int HAS_PARENT = 0x40;
    private static final int TIER = 0x3F;

    private final int capacity;
    private final int mask;
    private final @Nullable String[] namespaces;
    private final long[] hashes;
    private final long[] parents;
    /** Tier ordinal, plus {@link #STORED} for a copy added and {@link #HAS_PARENT} when there is a parent. */
    private final byte[] kinds;
    /** Per slot, 1 + the position of the change in it once its fields are written. */
    private final long[] filled;

    /** {@code [HEAD]}: next position to read, written by the consumer only; {@code [TAIL]}: next to claim. */
    private final long[] positions = new long[TAIL + 16];

    /**
     * A head position seen by a producer: the real head is never behind it, so while a claim stays below it
     * plus the capacity, producers need not read the head the consumer keeps writing. Racy by design.
     */
    private long headSeen;

    ChangeRing(int capacity) {
        if (capacity < 1 || capacity > 1 << 30) {
            throw new IllegalArgumentException("capacity must be 1 to 2^30, got " + capacity);
        }
        this.capacity = capacity;
        int slots = Integer.highestOneBit(capacity);
        if (slots < capacity) {
            slots <<= 1;
        }
        this.mask = slots - 1;
        this.namespaces = new String[slots];
        this.hashes = new long[slots];
        this.parents = new long[slots];
        this.kinds = new byte[slots];
        this.filled = new long[slots];
    }

    /** Queues a change; false when {@code capacity} changes are already waiting. Any thread. */
    boolean offer(TierId tier, BlockKey key, @Nullable BlockHash parent, boolean stored) {
        long t;
        do {
            t = (long) POSITION.getVolatile(positions, TAIL);
            if (t - headSeen >= capacity) {
                long h = (long) POSITION.getAcquire(positions, HEAD);
                headSeen = h;
                if (t - h >= capacity) {
                    return false;
                }
            }
        } while (!POSITION.compareAndSet(positions, TAIL, t, t + 1));
        int i = (int) (t & mask);
        String namespace = key.namespace();
        if (namespaces[i] != namespace) { // the slot mostly holds it already: no store, no GC write barrier
            namespaces[i] = namespace;
        }
        hashes[i] = key.hash().lastLong();
        parents[i] = parent == null ? 0 : parent.lastLong();
        kinds[i] = (byte) (tier.ordinal() | (stored ? STORED : 0) | (parent != null ? HAS_PARENT : 0));
        FILLED.setRelease(filled, i, t + 1);
        return true;
    }

    /**
     * Hands up to {@code max} changes to {@code sink} in order, stopping at the first slot claimed but not yet
     * filled; returns how many. The slots are handed back to producers all at once at the end. The publisher
     * thread only.
     */
    int drain(Sink sink, int max) {
        long h = (long) POSITION.getOpaque(positions, HEAD);
        int n = 0;
        try {
            while (n < max) {
                int i = (int) (h & mask);
                if ((long) FILLED.getAcquire(filled, i) != h + 1) {
                    break;
                }
                int kind = kinds[i];
                String namespace = namespaces[i];
                h++;
                n++;
                sink.accept(
                        TIERS[kind & TIER],
                        namespace,
                        hashes[i],
                        (kind & HAS_PARENT) != 0,
                        parents[i],
                        (kind & STORED) != 0);
            }
        } finally {
            POSITION.setRelease(positions, HEAD, h);
        }
        return n;
    }

    /** Changes waiting (claimed, filled or not). */
    int size() {
        return (int) Math.max(
                0, (long) POSITION.getVolatile(positions, TAIL) - (long) POSITION.getVolatile(positions, HEAD));
    }

    boolean isEmpty() {
        return size() == 0;
    }
}
