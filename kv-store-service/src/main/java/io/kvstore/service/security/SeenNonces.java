package io.kvstore.service.security;

import java.util.HexFormat;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * The nonces of the signed peer calls this node accepted, each kept while its signature's timestamp is within the
 * window, so that a call captured on the wire and sent again to the node it was signed for is refused. At most
 * {@code capacity} are kept; past that a new call is refused, never a kept nonce forgotten.
 *
 * <p>Why a ring of seconds: a signature is good while its timestamp is within {@code window} seconds of this node's
 * clock, and a repeat carries the same timestamp (it is signed), so a nonce needs keeping exactly as long as its
 * second is in the window and is looked for only among the nonces of that second. They are kept in one concurrent
 * set per signed second, in a ring of {@code 2 * window + 1} slots indexed by it: a second that left the window is
 * dropped whole when a new second takes its slot (or when the store is full), without a sweep over every nonce and
 * without a lock; a slot changes hands by compare-and-set. Cost: about 80 bytes a nonce (the set's node and the
 * two longs), so the default million is some 80 MB at most.
 *
 * <p>Why refuse when full: forgetting a nonce before its second leaves the window would let exactly its replay
 * through. The count is reserved before a nonce goes in and given back when its second is dropped, so it never
 * exceeds the capacity; a second's count is closed (negative) when the second is dropped, so a call racing the drop
 * counts itself in the next set it finds, never in one already given back.
 */
final class SeenNonces {

    /** What {@link #accept} made of a nonce. */
    enum Outcome {
        /** First seen: kept until its second leaves the window. */
        ACCEPTED,
        /** Already accepted with this timestamp: a repeat of a call this node took. */
        REPLAYED,
        /** Its second is a whole ring older than one in use: outside the window. */
        EXPIRED,
        /** {@code capacity} nonces are kept and none has left the window: refused, nothing forgotten. */
        FULL
    }

    /** A nonce as {@value PeerCredentials#NONCE} carries it: 128 bits, 32 hex digits. */
    record Nonce(long high, long low) {

        /** The nonce {@code hex} names, or null when it is not 32 hex digits. */
        static @Nullable Nonce parse(@Nullable String hex) {
            if (hex == null || hex.length() != 32) {
                return null;
            }
            for (int i = 0; i < hex.length(); i++) {
                if (Character.digit(hex.charAt(i), 16) < 0) {
                    return null;
                }
            }
            return new Nonce(HexFormat.fromHexDigitsToLong(hex, 0, 16), HexFormat.fromHexDigitsToLong(hex, 16, 32));
        }

        @Override
        public String toString() {
            return HexFormat.of().toHexDigits(high) + HexFormat.of().toHexDigits(low);
        }
    }

    /** The nonces accepted with one signed second. */
    private static final class Second {
        final long at;
        final Set<Nonce> nonces = ConcurrentHashMap.newKeySet();
        /** Nonces counted in {@link #kept} for this second; negative once dropped (given back then). */
        final AtomicInteger counted = new AtomicInteger();

        Second(long at) {
            this.at = at;
        }

        /** Counts one more nonce here; false when this second was dropped meanwhile. */
        boolean enter() {
            for (int c = counted.get(); c >= 0; c = counted.get()) {
                if (counted.compareAndSet(c, c + 1)) {
                    return true;
                }
            }
            return false;
        }

        /** Gives back a count {@link #enter} took; false when the drop gave it back already. */
        boolean leave() {
            for (int c = counted.get(); c > 0; c = counted.get()) {
                if (counted.compareAndSet(c, c - 1)) {
                    return true;
                }
            }
            return false;
        }

        /** Closes the count; what it held, to give back. */
        int close() {
            return Math.max(0, counted.getAndSet(Integer.MIN_VALUE));
        }
    }

    private final long window;
    private final long capacity;
    private final AtomicReferenceArray<@Nullable Second> ring;
    private final AtomicLong kept = new AtomicLong();

    /**
     * @param window seconds a signature is good either side of this node's clock
     * @param capacity the most nonces kept at once
     */
    SeenNonces(long window, long capacity) {
        if (window < 1 || capacity < 1) {
            throw new IllegalArgumentException("window and capacity must be positive");
        }
        this.window = window;
        this.capacity = capacity;
        this.ring = new AtomicReferenceArray<>(Math.toIntExact(2 * window + 1));
    }

    /**
     * Takes {@code nonce}, signed at {@code at} (unix seconds, within the window of {@code now}, as the signature
     * check found it), unless it was taken already with that timestamp or the store is full.
     */
    Outcome accept(long at, Nonce nonce, long now) {
        while (true) {
            Second second = second(at);
            if (second == null) {
                return Outcome.EXPIRED;
            }
            if (second.nonces.contains(nonce)) {
                return Outcome.REPLAYED;
            }
            if (!reserve(now)) {
                return Outcome.FULL;
            }
            if (!second.enter()) {
                kept.decrementAndGet(); // dropped between the look-up and now: find its slot again
                continue;
            }
            if (second.nonces.add(nonce)) {
                return Outcome.ACCEPTED;
            }
            if (second.leave()) {
                kept.decrementAndGet();
            }
            return Outcome.REPLAYED; // the same nonce, at the same moment, on another thread
        }
    }

    /** How many nonces are kept now (those of seconds that left the window included, until they are dropped). */
    long kept() {
        return kept.get();
    }

    /** The set of second {@code at}, taking its slot from an older second; null when a newer one holds it. */
    private @Nullable Second second(long at) {
        int slot = (int) Math.floorMod(at, (long) ring.length());
        while (true) {
            Second current = ring.get(slot);
            if (current != null && current.at == at) {
                return current;
            }
            if (current != null && current.at > at) {
                return null;
            }
            Second fresh = new Second(at);
            if (ring.compareAndSet(slot, current, fresh)) {
                if (current != null) {
                    kept.addAndGet(-current.close());
                }
                return fresh;
            }
        }
    }

    /** Counts one more nonce unless {@code capacity} are kept even after dropping every second out of the window. */
    private boolean reserve(long now) {
        boolean dropped = false;
        while (true) {
            long k = kept.get();
            if (k >= capacity) {
                if (dropped) {
                    return false;
                }
                dropOutOfWindow(now);
                dropped = true;
            } else if (kept.compareAndSet(k, k + 1)) {
                return true;
            }
        }
    }

    /** Drops the seconds whose slots no new second has taken yet though they left the window. */
    private void dropOutOfWindow(long now) {
        for (int slot = 0; slot < ring.length(); slot++) {
            Second second = ring.get(slot);
            if (second != null && second.at < now - window && ring.compareAndSet(slot, second, null)) {
                kept.addAndGet(-second.close());
            }
        }
    }
}
