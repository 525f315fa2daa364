package io.kvstore.ffm.libc;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;

/**
 * errno of a downcall, captured without allocating per call. A downcall linked with {@link #CAPTURE}
 * takes the captured-state segment as its first argument; each thread gets one such segment, allocated
 * on its first capturing call and reused by every later one, so a hot {@code pread} loop costs no arena.
 *
 * <p>A native call pins a virtual thread to its carrier, so no other code runs on the thread between the
 * call and {@link #of} reading what it captured.
 */
public final class Errno {

    /** The linker option that makes a downcall capture errno into its first argument. */
    public static final Linker.Option CAPTURE = Linker.Option.captureCallState("errno");

    private static final StructLayout STATE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = STATE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    // an automatic arena: the segment lives as long as its thread refers to it
    private static final ThreadLocal<MemorySegment> STATE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(STATE_LAYOUT));

    private Errno() {}

    /** The calling thread's captured-state segment, to pass as the first argument of a capturing downcall. */
    public static MemorySegment state() {
        return STATE.get();
    }

    /** The errno a capturing downcall left in {@code state}. */
    public static int of(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }
}
