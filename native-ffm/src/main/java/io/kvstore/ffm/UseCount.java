package io.kvstore.ffm;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The uses under way of something native that may be closed meanwhile (an agent's calls, a copier's moves), so
 * that closing frees it only once none is: a use either runs on the live object or is refused, and never hands
 * the library a destroyed handle. Lock-free: a use is one compare-and-set in and one decrement out; the closed
 * bit is the count's sign.
 */
public final class UseCount {

    private static final int CLOSED = Integer.MIN_VALUE;
    /** How often {@link #closeAndAwait()} spins for the uses under way before it parks between looks. */
    private static final int SPINS = 1_000;

    private final AtomicInteger uses = new AtomicInteger();

    /** Begins a use; false, counting nothing, once {@link #closeAndAwait()} began. End it with {@link #exit()}. */
    public boolean tryEnter() {
        int n = uses.get();
        while (true) {
            if ((n & CLOSED) != 0) {
                return false;
            }
            int seen = uses.compareAndExchange(n, n + 1);
            if (seen == n) {
                return true;
            }
            n = seen;
        }
    }

    /** Ends a use {@link #tryEnter()} began. */
    public void exit() {
        uses.decrementAndGet();
    }

    /**
     * Refuses new uses from now on and waits, without a deadline, until those under way ended; false when an
     * earlier call closed it already, after the same wait: whichever call returns, no use is under way.
     */
    public boolean closeAndAwait() {
        boolean first = (uses.getAndUpdate(n -> n | CLOSED) & CLOSED) == 0;
        for (int spins = 0; uses.get() != CLOSED; spins++) {
            if (spins < SPINS) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(20_000);
            }
        }
        return first;
    }
}
