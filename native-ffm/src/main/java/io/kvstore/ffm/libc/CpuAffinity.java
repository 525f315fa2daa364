package io.kvstore.ffm.libc;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.BitSet;

/**
 * Which CPUs a Linux thread or process may run on ({@code sched_setaffinity}/{@code sched_getaffinity}),
 * and the calling thread's kernel id ({@code gettid}). For benchmarks that give a data path a CPU of its own
 * and the work beside it (a publisher, a subscriber process) the others, as a server with cores to spare
 * would, so that what is measured is the data path's cost rather than the scheduler's placement.
 */
public final class CpuAffinity {

    /** Bytes of the CPU mask passed to the kernel: 1,024 CPUs, glibc's {@code cpu_set_t}. */
    private static final long MASK_BYTES = 128;

    private static final NativeLibrary LIBC = NativeLibrary.libc();
    private static final MethodHandle SET = LIBC.function(
            "sched_setaffinity", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Errno.CAPTURE);
    private static final MethodHandle GET = LIBC.function(
            "sched_getaffinity", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Errno.CAPTURE);
    private static final MethodHandle GETTID = LIBC.function("gettid", FunctionDescriptor.of(JAVA_INT));

    private CpuAffinity() {}

    /** The calling thread's kernel thread id (what {@code /proc/self/task} lists). */
    public static int currentThreadId() {
        try {
            return (int) GETTID.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("gettid failed to run", t);
        }
    }

    /**
     * Lets thread (or process) {@code tid} run only on {@code cpus}; 0 is the calling thread.
     *
     * @throws PosixException when the kernel refuses (no such thread, a CPU that is not online or allowed)
     */
    public static void restrict(int tid, BitSet cpus) throws PosixException {
        if (cpus.isEmpty() || cpus.length() > MASK_BYTES * 8) {
            throw new IllegalArgumentException("CPUs must be 1 to 1024 ids below 1024, got " + cpus);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(MASK_BYTES, 8);
            long[] words = cpus.toLongArray();
            for (int i = 0; i < words.length; i++) {
                mask.setAtIndex(JAVA_LONG, i, words[i]);
            }
            call(SET, "sched_setaffinity", tid, mask, "cpus " + cpus);
        }
    }

    /** The CPUs thread (or process) {@code tid} may run on; 0 is the calling thread. */
    public static BitSet allowed(int tid) throws PosixException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(MASK_BYTES, 8);
            call(GET, "sched_getaffinity", tid, mask, "");
            return BitSet.valueOf(mask.toArray(JAVA_LONG));
        }
    }

    /** {@code sched_setaffinity} or {@code sched_getaffinity} of {@code tid} with {@code mask}; -1 is a {@link PosixException}. */
    private static void call(MethodHandle function, String name, int tid, MemorySegment mask, String detail)
            throws PosixException {
        MemorySegment state = Errno.state();
        int result;
        try {
            result = (int) function.invokeExact(state, tid, MASK_BYTES, mask);
        } catch (Throwable t) {
            throw new IllegalStateException(name + " failed to run", t);
        }
        if (result < 0) {
            throw new PosixException(name, "tid " + tid, detail, Errno.of(state));
        }
    }
}
