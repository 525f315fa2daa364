package io.kvstore.service.security;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The nonces of the signed peer calls this node accepted, as one anti-replay window per sending process, so that a
 * call captured on the wire and sent again to the node it was signed for is refused. A nonce is a sender (the
 * sending process's random 64 bits) and that sender's count of its calls to this node; each is accepted once.
 *
 * <p>Why a window per sender, as IPsec (RFC 4303, 3.4.3) and DTLS do: a sender counts up, so all this node needs
 * of it is the highest count accepted and a bitmap of the {@value #WINDOW} counts below it. A count above the
 * highest moves the window up (the bits it passes cleared, word by word: each bit is cleared once per pass, so
 * amortised O(1) a call); one within the window is accepted once (its bit); one below it is refused as too old
 * (the sender may sign the call again: a fresh nonce). Memory is 8 KiB a live sender, whatever the call rate:
 * before, every nonce of the last 5 minutes was kept (about 80 bytes each, capped at a million, and every signed
 * call refused past that, which a busy cluster reached at 3,300 signed calls a second). {@value #WINDOW} counts
 * is how far a call may fall behind later calls of its sender to this node and still be taken: calls in flight
 * together (a large store's body still being read while probes signed after it arrive), not a time.
 *
 * <p>Why a sender may be forgotten after {@code 2 * skew + margin} seconds without an accepted call: a call this
 * node accepted at its time {@code t} was signed at most {@code skew} ahead of it, {@code at <= t + skew} (the
 * timestamp check, made here again with the clock reading the call is accepted with); it can be presented again
 * only while {@code now - at <= skew}, so never after {@code t + 2 * skew}. The state of a sender idle for longer
 * holds only calls the timestamp check refuses anyway, so dropping it lets no replay through; a sender that calls
 * again starts a fresh window. The margin ({@value #MARGIN_SECONDS} s) covers the moments between a thread's clock
 * reading and its look-up of the sender, and clocks stepped back. At most {@code capacity} senders are kept: a new
 * one past that is refused ({@link Outcome#FULL}, after the idle ones were dropped), never a live one forgotten
 * early, which would let its calls be replayed.
 *
 * <p>Concurrency: senders sit in a concurrent map (no global lock); each sender's window is guarded by its own
 * monitor, held for a few bit operations, so only calls of one sender wait for one another. The idle are dropped
 * by whichever call first finds a sweep due (one at a time, by compare-and-set), each under its sender's monitor.
 */
final class SeenNonces {

    /** Counts a sender's window covers below its highest accepted: 65,536 bits, 8 KiB a sender. */
    static final int WINDOW = 1 << 16;
    /** Seconds past {@code 2 * skew} before an idle sender is forgotten. */
    static final long MARGIN_SECONDS = 60;

    /** What {@link #accept} made of a nonce. */
    enum Outcome {
        /** First seen: its bit set in its sender's window. */
        ACCEPTED,
        /** Already accepted: a repeat of a call this node took. */
        REPLAYED,
        /** Below its sender's window: {@value SeenNonces#WINDOW} later counts were seen, it cannot be told. */
        TOO_OLD,
        /** Its timestamp is outside the window of {@code now}. */
        EXPIRED,
        /** A new sender, and {@code capacity} senders live: refused, none forgotten. */
        FULL
    }

    /** A nonce as {@value PeerCredentials#NONCE} carries it: the sender's 64 bits, then its count, 32 hex digits. */
    record Nonce(long sender, long count) {

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
            return HexFormat.of().toHexDigits(sender) + HexFormat.of().toHexDigits(count);
        }
    }

    /** One sender's window: counts compared unsigned; guarded by its own monitor. */
    private static final class Sender {
        private final long[] bits = new long[WINDOW / Long.SIZE];
        private long highest;
        private long lastAccepted;
        /** Set when the sweep removed it: a call that found it looks the sender up again. */
        private boolean dropped;

        Sender(long count, long now) {
            highest = count;
            lastAccepted = now;
            set(count);
        }

        /** Accepts {@code count} once; null when this state was dropped meanwhile. */
        synchronized @Nullable Outcome accept(long count, long now) {
            if (dropped) {
                return null;
            }
            if (Long.compareUnsigned(count, highest) > 0) {
                advance(count);
            } else if (Long.compareUnsigned(highest - count, WINDOW) >= 0) {
                return Outcome.TOO_OLD;
            } else if (isSet(count)) {
                return Outcome.REPLAYED;
            } else {
                set(count);
            }
            lastAccepted = Math.max(lastAccepted, now);
            return Outcome.ACCEPTED;
        }

        /** Drops this state when no call was accepted since {@code idleSince}; whether it did. */
        synchronized boolean dropIfIdle(long idleSince) {
            if (lastAccepted < idleSince) {
                dropped = true;
            }
            return dropped;
        }

        /** Moves the window up to {@code count}, the counts between cleared, and sets its bit. */
        private void advance(long count) {
            long distance = count - highest;
            if (Long.compareUnsigned(distance, WINDOW) >= 0) {
                Arrays.fill(bits, 0);
            } else {
                // clear the bits of highest + 1 .. count, whole words where they are passed whole
                for (long c = highest + 1; c != count + 1; ) {
                    int bit = (int) (c & (WINDOW - 1));
                    int word = bit >>> 6;
                    int from = bit & 63;
                    long left = count - c + 1;
                    int n = (int) Math.min(64 - from, left);
                    bits[word] &= n == 64 ? 0 : ~(((1L << n) - 1) << from);
                    c += n;
                }
            }
            highest = count;
            set(count);
        }

        private boolean isSet(long count) {
            int bit = (int) (count & (WINDOW - 1));
            return (bits[bit >>> 6] & (1L << bit)) != 0;
        }

        private void set(long count) {
            int bit = (int) (count & (WINDOW - 1));
            bits[bit >>> 6] |= 1L << bit;
        }
    }

    private final long skew;
    private final long idle;
    private final int capacity;
    private final Map<Long, Sender> senders = new ConcurrentHashMap<>();
    /** Senders in {@link #senders}, reserved before one goes in, so never more than {@code capacity}. */
    private final AtomicInteger live = new AtomicInteger();
    /** When the next sweep of idle senders is due (unix seconds). */
    private final AtomicLong nextSweep = new AtomicLong(Long.MIN_VALUE);

    /**
     * @param skew seconds a signature is good either side of this node's clock
     * @param capacity the most senders kept at once
     */
    SeenNonces(long skew, int capacity) {
        if (skew < 1 || capacity < 1) {
            throw new IllegalArgumentException("skew and capacity must be positive");
        }
        this.skew = skew;
        this.idle = 2 * skew + MARGIN_SECONDS;
        this.capacity = capacity;
    }

    /** Seconds without an accepted call after which a sender is forgotten: {@code 2 * skew + margin}. */
    long idleSeconds() {
        return idle;
    }

    /**
     * Takes {@code nonce}, signed at {@code at} (unix seconds), at {@code now}: accepted once, unless its timestamp
     * is out of the window of {@code now}, it is below its sender's window, or it is a new sender's and {@code
     * capacity} senders are live.
     */
    Outcome accept(long at, Nonce nonce, long now) {
        if (Math.abs(now - at) > skew) {
            return Outcome.EXPIRED;
        }
        sweep(now);
        while (true) {
            Sender sender = senders.get(nonce.sender());
            if (sender == null) {
                Outcome admitted = admit(nonce, now);
                if (admitted != null) {
                    return admitted;
                }
                continue; // another thread admitted this sender first: take the call through its state
            }
            Outcome outcome = sender.accept(nonce.count(), now);
            if (outcome != null) {
                return outcome;
            }
            // dropped by a sweep (idle, so none of its calls is in the window any more), about to leave the map
            Thread.onSpinWait();
        }
    }

    /** How many senders are kept now. */
    int senders() {
        return live.get();
    }

    /**
     * Keeps a new sender, its first call taken: {@link Outcome#ACCEPTED}, or {@link Outcome#FULL} when {@code
     * capacity} are live even after the idle were dropped; null when another thread kept this sender first. The
     * sender is made under its map bin's lock ({@code computeIfAbsent}), so two first calls of one sender never see
     * each other's reserved place and neither refused as one too many.
     */
    private @Nullable Outcome admit(Nonce nonce, long now) {
        if (live.get() >= capacity) {
            sweep(now);
        }
        Sender[] made = new Sender[1];
        Sender kept = senders.computeIfAbsent(nonce.sender(), key -> {
            for (int n = live.get(); n < capacity; n = live.get()) {
                if (live.compareAndSet(n, n + 1)) {
                    made[0] = new Sender(nonce.count(), now);
                    return made[0];
                }
            }
            return null;
        });
        if (kept == null) {
            return Outcome.FULL;
        }
        return kept == made[0] ? Outcome.ACCEPTED : null;
    }

    /**
     * Drops the senders idle for {@link #idleSeconds}: at most once a second, the first call of a second sweeping
     * (and the first after the clock was stepped back, which would otherwise hold sweeps off until it caught up).
     */
    private void sweep(long now) {
        long due = nextSweep.get();
        boolean steppedBack = due > now + 1;
        if ((now < due && !steppedBack) || !nextSweep.compareAndSet(due, now + 1)) {
            return;
        }
        long idleSince = now - idle;
        senders.forEach((key, sender) -> {
            if (sender.dropIfIdle(idleSince) && senders.remove(key, sender)) {
                live.decrementAndGet();
            }
        });
    }
}
