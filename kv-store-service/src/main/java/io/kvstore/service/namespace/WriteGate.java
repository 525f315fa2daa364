package io.kvstore.service.namespace;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The writes in progress into one declaration of a namespace (an uploaded frame filling its slot, a reservation
 * being admitted, a commit), so that a delete can refuse new ones and wait out those already admitted before it
 * deletes the namespace's blocks: each write either lands before the delete and goes with the namespace, or is
 * refused. Without it a block admitted just before the delete lands just after it, under a name no declaration
 * owns (or in the next tenant's declaration of the name), booked to whichever account the name maps to by then.
 *
 * <p>One counter per declaration, whose {@link #CLOSED} bit refuses new writes: a write costs one compare-and-set
 * to enter and one decrement to leave, and writes into different namespaces share nothing. A delete closes the
 * gate and waits for the count to reach zero; it opens it again when the delete is refused, and leaves it closed
 * when the declaration goes.
 */
final class WriteGate {

    private static final int CLOSED = 1 << 30;

    private final AtomicInteger state = new AtomicInteger();

    /** Ends an admitted write when closed: what {@link NamespaceRegistry#beginWrite} hands out, made once a gate. */
    final NamespaceRegistry.Write admitted = this::leave;

    /** Admits a write; false when the gate is closed. */
    boolean enter() {
        while (true) {
            int s = state.get();
            if ((s & CLOSED) != 0) {
                return false;
            }
            if (state.compareAndSet(s, s + 1)) {
                return true;
            }
        }
    }

    /** Ends a write {@link #enter} admitted. */
    void leave() {
        state.decrementAndGet();
    }

    /** Refuses new writes from now on; false when it already did (another delete is under way). */
    boolean close() {
        return (state.getAndUpdate(s -> s | CLOSED) & CLOSED) == 0;
    }

    /** Waits, closed, until no write is in progress; false when one still is at {@code deadlineNanos}. */
    boolean drained(long deadlineNanos) {
        while ((state.get() & ~CLOSED) != 0) {
            if (System.nanoTime() - deadlineNanos > 0) {
                return false;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        return true;
    }

    /** Admits writes again after a {@link #close} whose delete was refused. */
    void open() {
        state.getAndUpdate(s -> s & ~CLOSED);
    }
}
