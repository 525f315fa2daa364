package io.kvstore.engine;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * When something that fails in spells (the device storage copier) is worth a log line: the start of a spell at
 * most once per interval, and its end only when its start was said, so that a copier failing every other call
 * writes two lines a minute, not two a block. The reason of the spell under way is kept for operators either way.
 */
final class FailureNotices {

    private final long intervalNanos;
    private final AtomicReference<@Nullable String> failing = new AtomicReference<>();
    private final AtomicLong lastSaidNanos = new AtomicLong();
    private volatile boolean everSaid;
    private volatile boolean spellSaid;

    FailureNotices(long intervalNanos) {
        this.intervalNanos = intervalNanos;
    }

    /** Why it fails now, or null while it works. */
    @Nullable
    String failing() {
        return failing.get();
    }

    /** A failure for {@code why} at {@code nowNanos}: true when it starts a spell that is to be said. */
    boolean failed(String why, long nowNanos) {
        if (failing.getAndSet(why) != null) {
            return false;
        }
        long last = lastSaidNanos.get();
        boolean say = (!everSaid || nowNanos - last >= intervalNanos) && lastSaidNanos.compareAndSet(last, nowNanos);
        if (say) {
            everSaid = true;
        }
        spellSaid = say;
        return say;
    }

    /** It worked: true when that ends a spell whose start was said. */
    boolean worked() {
        if (failing.get() == null || failing.getAndSet(null) == null) {
            return false;
        }
        boolean said = spellSaid;
        spellSaid = false;
        return said;
    }
}
