package io.kvstore.service.events;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The bounded queue between the engine's storing threads and the publisher thread: a fixed ring of slots,
 * many producers, one consumer, lock-free. Offering a change costs one compare-and-set and no allocation
 * (no node, no change object, no separate counter): a storing thread claims the next slot, writes the
 * change's fields into it and marks the slot filled; the publisher reads filled slots in order. A full ring
 * refuses the change, so the storing thread never waits.
 *
 * <p>A slot is three adjacent longs of one array, what the event needs and not the block's objects: a header
 * (the slot's position, for the publisher to tell this lap's change from the last one's, the tier and kind of
 * change, and the namespace as a small number), then the wire form of the hash and of the parent (vLLM's
 * integer, the hash's last 8 bytes), taken by the storing thread while they are in its cache. Why so tight:
 * between two visits of the same slot the storing thread copies every block of a lap (4 KiB each) through
 * the caches, so each line of the ring it writes has gone cold and is a miss; the stalls grow with the lines
 * an event touches. One 24-byte slot is 0.375 lines an event in one sequential stream; the five parallel
 * arrays this replaced (33 bytes, the namespace a reference) were 0.52 lines in five, and cost a store ~180
 * against ~110 ns on the 2-vCPU Zen 5 VM (docs/events.md).
 *
 * <p>Namespaces are numbered once, on first sight, so the ring holds no references: a reference stored into
 * this long-lived array would cost the storing thread the garbage collector's write barrier. A number is never
 * given back (a slot still queued may carry it), so the ring keeps every namespace name it has seen: a few
 * dozen bytes each, for namespaces that are one per model and layout and live as long as the service.
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

        /** The namespace was deleted: the changes before this were made under its old declaration. */
        default void namespaceDeleted(String namespace) {}
    }

    /**
     * The read and claim positions live in one array, 128 bytes apart, so the publisher's head and the storing
     * threads' tail never share a cache line (nor an adjacent-line prefetch pair).
     */
    private static final VarHandle POSITION = MethodHandles.arrayElementVarHandle(long[].class);

    private static final int HEAD = 16;
    private static final int TAIL = 32;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);
    private static final int WORDS = 3;
    /**
     * How many claims ahead {@link #offer} reads a slot's line before it writes there: far enough for a miss
     * to memory to be done (a store takes about a microsecond), near enough for the line to stay in cache.
     */
    private static final int LOOK_AHEAD = 16;

    private static final TierId[] TIERS = TierId.values();
    private static final int STORED = 0x80;
    private static final int HAS_PARENT = 0x40;
    private static final int TIER = 0x3F;
    /** The tier bits of a slot that marks a namespace's deletion rather than a change. */
    private static final int DELETED = TIER;
    /** Namespaces a ring numbers at most (the header keeps 24 bits for the number). */
    static final int MAX_NAMESPACES = 1 << 24;

    private final int capacity;
    private final int maxNamespaces;
    private final int mask;
    /**
     * {@code WORDS} longs per slot: the header ({@code 1 + position} in the low 32 bits, the kind in the next 8,
     * the namespace's number in the top 24), the hash, the parent. The header is written last, with release.
     */
    private final long[] slots;

    /** Namespace numbers, given on first sight (any thread). */
    private final ConcurrentHashMap<String, Integer> numbers = new ConcurrentHashMap<>();
    /** The namespaces by number; grown by copy in {@link #register}, read by the publisher. */
    private volatile String[] names = new String[16];

    /** {@code [HEAD]}: next position to read, written by the consumer only; {@code [TAIL]}: next to claim. */
    private final long[] positions = new long[TAIL + 16];

    /**
     * A head position seen by a producer: the real head is never behind it, so while a claim stays below it
     * plus the capacity, producers need not read the head the consumer keeps writing. Racy by design.
     */
    private long headSeen;

    ChangeRing(int capacity) {
        this(capacity, MAX_NAMESPACES);
    }

    /** A ring that numbers at most {@code maxNamespaces} namespaces (tests use a small limit). */
    ChangeRing(int capacity, int maxNamespaces) {
        if (maxNamespaces < 1 || maxNamespaces > MAX_NAMESPACES) {
            throw new IllegalArgumentException("maxNamespaces must be 1 to 2^24, got " + maxNamespaces);
        }
        this.maxNamespaces = maxNamespaces;
        if (capacity < 1 || capacity > 1 << 28) {
            throw new IllegalArgumentException(
                    "capacity must be 1 to 2^28 (three longs a slot in one array), got " + capacity);
        }
        this.capacity = capacity;
        int slotCount = Integer.highestOneBit(capacity);
        if (slotCount < capacity) {
            slotCount <<= 1;
        }
        this.mask = slotCount - 1;
        this.slots = new long[slotCount * WORDS];
    }

    /**
     * Queues a change; false when {@code capacity} changes are already waiting, or (never in practice) when the
     * ring has numbered all the namespaces it may ({@link #MAX_NAMESPACES}). Any thread.
     */
    boolean offer(TierId tier, BlockKey key, @Nullable BlockHash parent, boolean stored) {
        long kind = tier.ordinal() | (stored ? STORED : 0) | (parent != null ? HAS_PARENT : 0);
        return offer(key.namespace(), kind, key.hash().lastLong(), parent == null ? 0 : parent.lastLong());
    }

    /** Queues the mark of a namespace's deletion, in order with the changes; false when full. Any thread. */
    boolean offerNamespaceDeleted(String namespace) {
        return offer(namespace, DELETED, 0, 0);
    }

    private boolean offer(String namespace, long kind, long hash, long parent) {
        long number = number(namespace);
        if (number < 0) {
            return false;
        }
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
        int at = (int) (t & mask) * WORDS;
        // touch the line of a slot LOOK_AHEAD claims ahead: its miss is a load's, which overlaps the stores
        // that follow, and by the time that slot is written its line is in cache (opaque: not dropped)
        SLOT.getOpaque(slots, (int) ((t + LOOK_AHEAD) & mask) * WORDS);
        slots[at + 1] = hash;
        slots[at + 2] = parent;
        SLOT.setRelease(slots, at, ((t + 1) & 0xFFFF_FFFFL) | kind << 32 | number << 40);
        return true;
    }

    /** The namespace's number, given on first sight; -1 when the ring has numbered all it can. */
    private long number(String namespace) {
        Integer known = numbers.get(namespace);
        return known != null ? known : register(namespace);
    }

    /** Numbers a namespace; its name is in {@link #names} before its number is in {@link #numbers}. */
    private synchronized long register(String namespace) {
        Integer known = numbers.get(namespace);
        if (known != null) {
            return known;
        }
        int next = numbers.size();
        if (next >= maxNamespaces) {
            return -1;
        }
        String[] current = names;
        if (next == current.length) {
            current = Arrays.copyOf(current, 2 * next);
        }
        current[next] = namespace;
        names = current;
        numbers.put(namespace, next);
        return next;
    }

    /**
     * Hands up to {@code max} changes to {@code sink} in order, stopping at the first slot claimed but not yet
     * filled; returns how many. The slots are handed back to producers all at once at the end. The publisher
     * thread only.
     */
    int drain(Sink sink, int max) {
        long h = (long) POSITION.getOpaque(positions, HEAD);
        String[] byNumber = names;
        int n = 0;
        try {
            while (n < max) {
                int at = (int) (h & mask) * WORDS;
                long header = (long) SLOT.getAcquire(slots, at);
                if ((int) header != (int) (h + 1)) {
                    break;
                }
                int kind = (int) (header >>> 32) & 0xFF;
                int number = (int) (header >>> 40);
                if (number >= byNumber.length || byNumber[number] == null) {
                    byNumber = names; // numbered after this drain began
                }
                h++;
                if ((kind & TIER) == DELETED) {
                    sink.namespaceDeleted(byNumber[number]); // a mark, not a change: not counted
                    continue;
                }
                n++;
                sink.accept(
                        TIERS[kind & TIER],
                        byNumber[number],
                        slots[at + 1],
                        (kind & HAS_PARENT) != 0,
                        slots[at + 2],
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
