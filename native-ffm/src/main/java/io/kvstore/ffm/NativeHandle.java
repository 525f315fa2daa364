package io.kvstore.ffm;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A native handle (a UCX context, worker, mapping, key or listener, a CUDA stream or event, a cuFile
 * handle) that is released exactly once. Closing flips the state with a compare-and-set and only the
 * winner calls {@link #release}, so a double close or two racing closes never free a handle twice; any
 * use after close fails with an {@link IllegalStateException} naming the handle instead of passing a
 * freed pointer to the library.
 */
public abstract class NativeHandle implements AutoCloseable {

    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

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
     * Releases the native handle the first time it is called; later calls do nothing.
     *
     * @throws IllegalStateException when {@link #checkReleasable()} refuses: the handle stays open
     */
    @Override
    public final void close() {
        if (closed.get()) {
            return;
        }
        checkReleasable();
        if (closed.compareAndSet(false, true)) {
            release(handle);
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
