package io.kvstore.service.events;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The bounded queue between the engine's storing threads and the publisher thread: a fixed ring of slots,
 * many producers, one consumer, lock-free. Offering a change costs one compare-and-set and no allocation
 * (no node, no change object, no separate counter): a storing thread claims the next slot, writes the
 * change's fields into it and marks the slot filled; the publisher reads filled slots in order. A full ring
 * refuses the change, so the storing thread never waits.
 */
final class ChangeRing {

    /** Receives the changes taken off the ring, in the order they were offered. */
    @FunctionalInterface
    interface Sink {
        void accept(TierId tier, BlockKey key, BlockHash parent, boolean stored);
    }

    private static final VarHandle HEAD;
    private static final VarHandle TAIL;
    private static final VarHandle FILLED = MethodHandles.arrayElementVarHandle(long[].class);
    private static final TierId[] TIERS = TierId.values();

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            HEAD = lookup.findVarHandle(ChangeRing.class, "head", long.class);
            TAIL = lookup.findVarHandle(ChangeRing.class, "tail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final int capacity;
    private final int mask;
    private final BlockKey[] keys;
    private final BlockHash[] parents;
    /** Tier ordinal, plus {@link #STORED} for a copy added. */
    private final byte[] kinds;
    /** Per slot, 1 + the position of the change in it once its fields are written. */
    private final long[] filled;

    private static final int STORED = 0x80;

    /** Next position to read; written by the consumer only. */
    @SuppressWarnings("unused") // through HEAD
    private volatile long head;

    /** Next position to claim. */
    @SuppressWarnings("unused") // through TAIL
    private volatile long tail;

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
        this.keys = new BlockKey[slots];
        this.parents = new BlockHash[slots];
        this.kinds = new byte[slots];
        this.filled = new long[slots];
    }

    /** Queues a change; false when {@code capacity} changes are already waiting. Any thread. */
    boolean offer(TierId tier, BlockKey key, BlockHash parent, boolean stored) {
        long t;
        do {
            t = (long) TAIL.getVolatile(this);
            if (t - (long) HEAD.getAcquire(this) >= capacity) {
                return false;
            }
        } while (!TAIL.compareAndSet(this, t, t + 1));
        int i = (int) (t & mask);
        keys[i] = key;
        parents[i] = parent;
        kinds[i] = (byte) (tier.ordinal() | (stored ? STORED : 0));
        FILLED.setRelease(filled, i, t + 1);
        return true;
    }

    /**
     * Hands up to {@code max} changes to {@code sink} in order, stopping at the first slot claimed but not yet
     * filled; returns how many. The publisher thread only.
     */
    int drain(Sink sink, int max) {
        long h = (long) HEAD.getOpaque(this);
        int n = 0;
        while (n < max) {
            int i = (int) (h & mask);
            if ((long) FILLED.getAcquire(filled, i) != h + 1) {
                break;
            }
            BlockKey key = keys[i];
            BlockHash parent = parents[i];
            int kind = kinds[i] & 0xFF;
            keys[i] = null;
            parents[i] = null;
            h++;
            HEAD.setRelease(this, h);
            sink.accept(TIERS[kind & ~STORED], key, parent, (kind & STORED) != 0);
            n++;
        }
        return n;
    }

    /** Changes waiting (claimed, filled or not). */
    int size() {
        return (int) Math.max(0, (long) TAIL.getVolatile(this) - (long) HEAD.getVolatile(this));
    }

    boolean isEmpty() {
        return size() == 0;
    }
}
