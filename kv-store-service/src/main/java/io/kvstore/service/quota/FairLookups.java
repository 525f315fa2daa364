package io.kvstore.service.quota;

import io.kvstore.service.error.TooManyRequestsException;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Lets lookups do their work (hashing a prompt, the catalog walk) a few at a time, handing the next turn to the
 * tenants waiting round-robin, so that one tenant's flood of lookups cannot put every other tenant's behind it.
 *
 * <p>Why it is built so: a request runs on a virtual thread, and once it has a carrier it runs to its end, so
 * without this, requests are served in the order they arrived, whoever sent them (one tenant's 512 connections
 * put another tenant's lookup at 300-450 ms against 1.3 ms alone: docs/benchmarks.md, "Tenant fairness"). The
 * turns are fewer than the carriers (one less), so a carrier is always free to read and parse newly arrived
 * requests and line them up by tenant; with as many turns as carriers, the carriers stay busy with whoever holds
 * one and the arrival order comes back (measured). A turn is taken after the request's body has arrived and been
 * parsed, so a slow sender holds none. A waiter is woken from a platform thread: woken by a virtual thread, it
 * would run on that carrier before anything newly arrived. On a single carrier there is nothing to free, and the
 * gate is off.
 */
public final class FairLookups {

    private final ReentrantLock lock = new ReentrantLock();
    /** Tenants with lookups waiting, in the order their next turn comes; guarded by lock. */
    private final Map<String, ArrayDeque<Waiter>> waiting = new LinkedHashMap<>();

    private final int turns;
    /** Turns not held; guarded by lock. */
    private int free;

    private final Executor wakeups = Executors.newSingleThreadExecutor(
            Thread.ofPlatform().name("kvstore-fair-lookups").daemon().factory());

    /** One lookup waiting for its turn. */
    private static final class Waiter {
        final Thread thread = Thread.currentThread();
        volatile boolean granted;
    }

    /**
     * @param turns how many lookups do their work at once; 0 or less: no gate (every lookup runs at once)
     */
    public FairLookups(int turns) {
        this.turns = Math.max(0, turns);
        this.free = this.turns;
    }

    /** The gate for this JVM: one turn fewer than virtual-thread carriers, off with a single carrier. */
    public static FairLookups forCarriers() {
        String configured = System.getProperty("jdk.virtualThreadScheduler.parallelism");
        int carriers = configured != null
                ? Integer.parseInt(configured)
                : Runtime.getRuntime().availableProcessors();
        return new FairLookups(carriers - 1);
    }

    /** How many lookups do their work at once (0: no gate). */
    public int turns() {
        return turns;
    }

    /**
     * Runs {@code work} for {@code tenant} in its turn.
     *
     * @throws TooManyRequestsException when the thread was interrupted while it waited (the service stopping): the
     *     work did not run
     */
    public <T> T run(String tenant, Supplier<T> work) {
        if (turns == 0) {
            return work.get();
        }
        enter(tenant);
        try {
            return work.get();
        } finally {
            leave();
        }
    }

    private void enter(String tenant) {
        Waiter me;
        lock.lock();
        try {
            if (free > 0 && waiting.isEmpty()) {
                free--;
                return;
            }
            me = new Waiter();
            waiting.computeIfAbsent(tenant, t -> new ArrayDeque<>()).add(me);
        } finally {
            lock.unlock();
        }
        while (!me.granted) {
            LockSupport.park(this);
            if (Thread.interrupted() && !me.granted) {
                withdraw(tenant, me);
                return;
            }
        }
    }

    /** An interrupted waiter leaves the line, or keeps the turn it was given meanwhile. */
    private void withdraw(String tenant, Waiter me) {
        lock.lock();
        try {
            if (!me.granted) {
                ArrayDeque<Waiter> line = waiting.get(tenant);
                if (line != null && line.remove(me) && line.isEmpty()) {
                    waiting.remove(tenant);
                }
                Thread.currentThread().interrupt();
                throw new TooManyRequestsException("tenant '" + tenant + "': the lookup was interrupted while it "
                        + "waited for its turn (kvstore stopping?); it did not run, retry it");
            }
        } finally {
            lock.unlock();
        }
        Thread.currentThread().interrupt(); // granted after all: it runs, and the interrupt stays set
    }

    private void leave() {
        @Nullable Waiter next = null;
        lock.lock();
        try {
            Iterator<Map.Entry<String, ArrayDeque<Waiter>>> first =
                    waiting.entrySet().iterator();
            if (first.hasNext()) {
                Map.Entry<String, ArrayDeque<Waiter>> e = first.next();
                first.remove();
                next = e.getValue().removeFirst(); // a tenant is listed only while it has a waiter
                next.granted = true; // under the lock: a waiter withdrawing sees the turn it was given
                if (!e.getValue().isEmpty()) {
                    waiting.put(e.getKey(), e.getValue()); // its next lookup waits for the other tenants' turns
                }
            } else {
                free++;
            }
        } finally {
            lock.unlock();
        }
        if (next != null) {
            Waiter woken = next;
            if (Thread.currentThread().isVirtual()) {
                wakeups.execute(() -> LockSupport.unpark(woken.thread));
            } else {
                LockSupport.unpark(woken.thread);
            }
        }
    }
}
