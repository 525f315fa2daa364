package io.kvstore.concurrent;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * At most one log line per interval for an event clients or peers can cause at any rate (a client leaving
 * mid-request, a stalled upload answered 408, a cluster node that stopped answering): the first occurrence gets
 * its line, later ones within the interval are only counted, and the next line says how many there were.
 * Lock-free, so a burst of them never queues on a lock.
 */
public final class IntervalLog {

    private final long intervalNanos;
    private final LongSupplier nanoClock;
    private final AtomicLong lineAt;
    private final LongAdder sinceLine = new LongAdder();

    public IntervalLog(Duration interval) {
        this(interval, System::nanoTime);
    }

    IntervalLog(Duration interval, LongSupplier nanoClock) {
        this.intervalNanos = interval.toNanos();
        this.nanoClock = nanoClock;
        this.lineAt = new AtomicLong(nanoClock.getAsLong() - intervalNanos);
    }

    /**
     * Counts one occurrence. Returns -1 when no line is due; otherwise the caller writes its line now, and the
     * answer is how many occurrences since the last line went without one.
     */
    public long occurred() {
        sinceLine.increment();
        long now = nanoClock.getAsLong();
        long last = lineAt.get();
        if (now - last < intervalNanos || !lineAt.compareAndSet(last, now)) {
            return -1;
        }
        return Math.max(0, sinceLine.sumThenReset() - 1);
    }

    /** {@code "; N more <what> since the last such line"}, or nothing when {@code unlogged} is 0. */
    public static String more(long unlogged, String what) {
        return unlogged > 0 ? "; " + unlogged + " more " + what + " since the last such line" : "";
    }
}
