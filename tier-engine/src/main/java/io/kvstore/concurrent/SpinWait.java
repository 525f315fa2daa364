package io.kvstore.concurrent;

import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * A bounded busy-wait for states that last microseconds: another thread finishing a copy, freeing a
 * slot or letting go of a read. Each round hints the CPU and yields; after the limit the caller's
 * message becomes an {@link IllegalStateException}, so a stuck peer shows as an error, never a hang.
 *
 * <p>The clock starts at the first round, so a wait whose condition already holds costs no time call.
 */
public final class SpinWait {

    /** How long the engine waits for a copy, a reader or a removal by another thread. */
    public static final long DEFAULT_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final long limitNanos;
    private long deadline;

    private SpinWait(long limitNanos) {
        this.limitNanos = limitNanos;
    }

    /** A wait that gives up {@code limitNanos} after its first round. */
    public static SpinWait upTo(long limitNanos) {
        return new SpinWait(limitNanos);
    }

    /**
     * Waits one short round.
     *
     * @throws IllegalStateException with {@code message} once the limit has passed
     */
    public void pause(Supplier<String> message) {
        long now = System.nanoTime();
        if (deadline == 0) {
            deadline = now + limitNanos;
        } else if (now > deadline) {
            throw new IllegalStateException(message.get());
        }
        Thread.onSpinWait();
        Thread.yield();
    }

    /**
     * Returns once {@code done} holds.
     *
     * @throws IllegalStateException with {@code message} when it does not hold within {@code limitNanos}
     */
    public static void until(BooleanSupplier done, long limitNanos, Supplier<String> message) {
        SpinWait wait = null;
        while (!done.getAsBoolean()) {
            if (wait == null) {
                wait = upTo(limitNanos);
            }
            wait.pause(message);
        }
    }
}
