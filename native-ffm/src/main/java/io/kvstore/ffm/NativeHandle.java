package io.kvstore.ffm;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A native handle (a UCX context, worker, mapping, key or listener, a CUDA stream or event, a cuFile
 * handle) that is released exactly once. Closing flips the state with a compare-and-set and only the
 * winner calls {@link #release}, so a double close or two racing closes never free a handle twice; any
 * use after close fails with an {@link IllegalStateException} naming the handle instead of passing a
 * freed pointer to the library. Every close returns only once the handle is released: a close that lost
 * the race waits for the winner's {@link #release} to return, so its caller may free what the handle used.
 */
public abstract class NativeHandle implements AutoCloseable {

    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Opened when the winning close's {@link #release} returned (or threw). */
    private final CountDownLatch released = new CountDownLatch(1);
    /** The thread running {@link #release}: a close it makes of this handle from within must not wait on itself. */
    private volatile Thread releasing;

    protected NativeHandle(MemorySegment handle) {
        this.handle = handle;
    }

    /**
     * The handle, for a call into the library.
     *
     * @throws IllegalStateException when this handle is closed
     */
    protected final MemorySegment live() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
        return handle;
    }

    /** The handle's address, also after close (for names in messages and matching). */
    protected final long handleAddress() {
        return handle.address();
    }

    public final boolean isClosed() {
        return closed.get();
    }

    /**
     * Releases the native handle the first time it is called; later calls do nothing but wait, without a
     * deadline, until that release returned.
     *
     * @throws IllegalStateException when {@link #checkReleasable()} refuses: the handle stays open
     */
    @Override
    public final void close() {
        if (!closed.get()) {
            checkReleasable();
            if (closed.compareAndSet(false, true)) {
                releasing = Thread.currentThread();
                try {
                    release(handle);
                } finally {
                    releasing = null;
                    released.countDown();
                }
                return;
            }
        }
        if (Thread.currentThread() != releasing) {
            awaitUninterruptibly(released);
        }
    }

    /**
     * Marks the handle closed without calling {@link #release}, for an owner that frees the native object
     * itself; later closes do nothing. False when a close won the race: that close releases it.
     */
    protected final boolean markReleased() {
        if (closed.compareAndSet(false, true)) {
            released.countDown();
            return true;
        }
        return false;
    }

    /** Waits for {@code latch}, interrupts or not: the caller must not go on before it opened. */
    private static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                latch.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Throws an {@link IllegalStateException}, saying why, when the handle must not be released yet
     * (the library still works on it); called by {@link #close()} before it releases. Allows by default.
     */
    protected void checkReleasable() {}

    /** Frees {@code handle} in the library; called at most once, by the first {@link #close()}. */
    protected abstract void release(MemorySegment handle);
}
