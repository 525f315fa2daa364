package io.kvstore.ffm.libc;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.kvstore.ffm.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;

/**
 * The libc calls the NVMe tier needs, bound with FFM: open with O_DIRECT, positional reads and writes,
 * fallocate, fdatasync, mlock, plus the few calls other bindings need (poll, a memory-backed FILE*, setenv).
 * Every failing call captures errno into the thread's reusable state ({@link Errno}), and a failure becomes a
 * {@link PosixException} naming the call, its arguments (the path where there is one) and strerror. Linux
 * x86-64/aarch64 flag values.
 */
public final class LibC {

    /** Open for reading and writing. */
    public static final int O_RDWR = 0x2;
    /** Create the file if it does not exist. */
    public static final int O_CREAT = 0x40;
    /** Bypass the page cache; buffers, offsets and lengths must be aligned to the logical block size. */
    public static final int O_DIRECT = 0x4000;
    /** Close the descriptor in child processes. */
    public static final int O_CLOEXEC = 0x80000;
    /** errno: the filesystem does not support the operation (fallocate on some filesystems). */
    public static final int EOPNOTSUPP = 95;
    /** errno: invalid argument (O_DIRECT on tmpfs). */
    public static final int EINVAL = 22;
    /** errno: no space left on device. */
    public static final int ENOSPC = 28;
    /** errno: file too large (beyond the process's RLIMIT_FSIZE or the filesystem's limit). */
    public static final int EFBIG = 27;
    /** errno: disk quota exceeded. */
    public static final int EDQUOT = 122;
    /** errno: interrupted system call. */
    public static final int EINTR = 4;
    /** errno: the device failed the transfer (a bad sector, a failing drive). */
    public static final int EIO = 5;

    /** poll(2) event: data to read. */
    public static final short POLLIN = 1;

    /** {@code struct pollfd}: int fd, short events, short revents. */
    public static final StructLayout POLLFD = MemoryLayout.structLayout(
            JAVA_INT.withName("fd"), JAVA_SHORT.withName("events"), JAVA_SHORT.withName("revents"));

    private static final NativeLibrary LIBC = NativeLibrary.libc();

    private static final MethodHandle OPEN = LIBC.function(
            "open",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
            Errno.CAPTURE,
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE =
            LIBC.function("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), Errno.CAPTURE);
    private static final MethodHandle PREAD = LIBC.function(
            "pread", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), Errno.CAPTURE);
    private static final MethodHandle PWRITE = LIBC.function(
            "pwrite", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), Errno.CAPTURE);
    private static final MethodHandle FALLOCATE = LIBC.function(
            "fallocate", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), Errno.CAPTURE);
    private static final MethodHandle FTRUNCATE =
            LIBC.function("ftruncate", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG), Errno.CAPTURE);
    private static final MethodHandle FDATASYNC =
            LIBC.function("fdatasync", FunctionDescriptor.of(JAVA_INT, JAVA_INT), Errno.CAPTURE);
    private static final MethodHandle MLOCK =
            LIBC.function("mlock", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), Errno.CAPTURE);
    private static final MethodHandle MUNLOCK =
            LIBC.function("munlock", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), Errno.CAPTURE);
    private static final MethodHandle SETENV =
            LIBC.function("setenv", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    private static final MethodHandle STRERROR = LIBC.function("strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    private static final MethodHandle POLL =
            LIBC.function("poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle OPEN_MEMSTREAM =
            LIBC.function("open_memstream", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    private static final MethodHandle FCLOSE = LIBC.function("fclose", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle FREE = LIBC.function("free", FunctionDescriptor.ofVoid(ADDRESS));

    /** A capturing downcall returning int; {@code state} is its first argument. */
    @FunctionalInterface
    private interface IntCall {
        int invoke(MemorySegment state) throws Throwable;
    }

    /** pread or pwrite of all of {@code buffer} at {@code offset}, capturing errno into {@code state}. */
    @FunctionalInterface
    private interface PositionalCall {
        long invoke(MemorySegment state, int fd, MemorySegment buffer, long offset) throws Throwable;
    }

    /** Something that writes to a C {@code FILE*}. */
    @FunctionalInterface
    public interface FileWriter {
        void writeTo(MemorySegment file) throws Throwable;
    }

    private LibC() {}

    /** The message libc gives for an errno value. */
    public static String strerror(int errno) {
        try {
            return ((MemorySegment) STRERROR.invokeExact(errno))
                    .reinterpret(512)
                    .getString(0);
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }

    /**
     * Runs a capturing call with the thread's reusable errno state. A negative result is a
     * {@link PosixException} naming the call, its subject and detail, and strerror; anything the
     * downcall itself throws is an {@link IllegalStateException}.
     */
    private static int call(String name, String subject, String detail, IntCall call) throws PosixException {
        MemorySegment state = Errno.state();
        int result;
        try {
            result = call.invoke(state);
        } catch (Throwable t) {
            throw new IllegalStateException(name + "(" + subject + ") failed to run", t);
        }
        if (result < 0) {
            throw new PosixException(name, subject, detail, Errno.of(state));
        }
        return result;
    }

    /** Runs a capturing call that answers 0 or -1; returns 0 or the errno, for callers that decide. */
    private static int errnoOf(String name, IntCall call) {
        MemorySegment state = Errno.state();
        try {
            return call.invoke(state) == 0 ? 0 : Errno.of(state);
        } catch (Throwable t) {
            throw new IllegalStateException(name + " failed to run", t);
        }
    }

    /** open(2); returns the descriptor. */
    public static int open(String path, int flags, int mode) throws PosixException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cPath = arena.allocateFrom(path);
            return call("open", path, "flags 0x" + Integer.toHexString(flags), state ->
                    (int) OPEN.invokeExact(state, cPath, flags, mode));
        }
    }

    public static void close(int fd) throws PosixException {
        call("close", "fd " + fd, "", state -> (int) CLOSE.invokeExact(state, fd));
    }

    /**
     * Reads exactly {@code buffer.byteSize()} bytes at {@code offset}, retrying short reads and EINTR.
     *
     * @throws PosixException on an error, or when the file ends first (named as such)
     */
    public static void preadFully(int fd, MemorySegment buffer, long offset, String path) throws PosixException {
        fully(
                "pread",
                true,
                (state, f, b, o) -> (long) PREAD.invokeExact(state, f, b, b.byteSize(), o),
                fd,
                buffer,
                offset,
                path);
    }

    /** Writes all of {@code buffer} at {@code offset}, retrying short writes and EINTR. */
    public static void pwriteFully(int fd, MemorySegment buffer, long offset, String path) throws PosixException {
        fully(
                "pwrite",
                false,
                (state, f, b, o) -> (long) PWRITE.invokeExact(state, f, b, b.byteSize(), o),
                fd,
                buffer,
                offset,
                path);
    }

    /** The loop shared by pread and pwrite: until every byte moved, retrying short transfers and EINTR. */
    private static void fully(
            String name, boolean reading, PositionalCall io, int fd, MemorySegment buffer, long offset, String path)
            throws PosixException {
        MemorySegment state = Errno.state();
        long length = buffer.byteSize();
        long done = 0;
        while (done < length) {
            long n;
            try {
                n = io.invoke(state, fd, buffer.asSlice(done), offset + done);
            } catch (Throwable t) {
                throw new IllegalStateException(name + "(" + path + ") failed to run", t);
            }
            if (n < 0) {
                int errno = Errno.of(state);
                if (errno == EINTR) {
                    continue;
                }
                throw new PosixException(
                        name, path, "offset " + (offset + done) + ", length " + (length - done), errno);
            }
            if (n == 0) {
                // a write of zero bytes is retried; a read of zero bytes is the end of the file
                if (reading) {
                    throw new PosixException(
                            name, path, "offset " + (offset + done) + ": end of file before " + length + " bytes", 0);
                }
                continue;
            }
            done += n;
        }
    }

    /** fallocate(2) with mode 0: reserves the blocks so later writes cannot run out of space. */
    public static void fallocate(int fd, long offset, long length, String path) throws PosixException {
        call("fallocate", path, "offset " + offset + ", length " + length, state ->
                (int) FALLOCATE.invokeExact(state, fd, 0, offset, length));
    }

    public static void ftruncate(int fd, long length, String path) throws PosixException {
        call("ftruncate", path, "length " + length, state -> (int) FTRUNCATE.invokeExact(state, fd, length));
    }

    public static void fdatasync(int fd, String path) throws PosixException {
        call("fdatasync", path, "", state -> (int) FDATASYNC.invokeExact(state, fd));
    }

    /**
     * setenv(3) in the process environment (which native libraries read; Java's own view of the
     * environment does not change). Does nothing when {@code overwrite} is false and the variable is set.
     */
    public static void setenv(String name, String value, boolean overwrite) {
        int rc;
        try (Arena arena = Arena.ofConfined()) {
            rc = (int) SETENV.invokeExact(arena.allocateFrom(name), arena.allocateFrom(value), overwrite ? 1 : 0);
        } catch (Throwable t) {
            throw new IllegalStateException("setenv(" + name + ") failed to run", t);
        }
        if (rc != 0) {
            throw new IllegalStateException("setenv(" + name + ") failed");
        }
    }

    /** mlock(2): returns 0 on success, otherwise errno (the caller decides whether that is fatal). */
    public static int mlock(MemorySegment memory) {
        return errnoOf("mlock", state -> (int) MLOCK.invokeExact(state, memory, memory.byteSize()));
    }

    public static int munlock(MemorySegment memory) {
        return errnoOf("munlock", state -> (int) MUNLOCK.invokeExact(state, memory, memory.byteSize()));
    }

    /**
     * poll(2) on {@code count} {@link #POLLFD} entries for at most {@code timeoutMillis}; returns poll's
     * answer (ready descriptors, 0 on time-out, -1 on error or a signal, which callers treat as a wake-up).
     */
    public static int poll(MemorySegment fds, long count, int timeoutMillis) {
        try {
            return (int) POLL.invokeExact(fds, count, timeoutMillis);
        } catch (Throwable t) {
            throw new IllegalStateException("poll failed to run", t);
        }
    }

    /**
     * What {@code writer} prints to a C {@code FILE*}, as text: the stream is an {@code open_memstream}
     * buffer, closed and freed here (for library calls that print diagnostics to a stream).
     */
    public static String captureOutput(FileWriter writer) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bufferOut = arena.allocate(ADDRESS);
            MemorySegment sizeOut = arena.allocate(JAVA_LONG);
            MemorySegment stream = (MemorySegment) OPEN_MEMSTREAM.invokeExact(bufferOut, sizeOut);
            if (stream.address() == 0) {
                throw new IllegalStateException("open_memstream failed");
            }
            try {
                writer.writeTo(stream);
            } finally {
                int ignored = (int) FCLOSE.invokeExact(stream); // flushes: buffer and size are final now
            }
            MemorySegment buffer = bufferOut.get(ADDRESS, 0);
            try {
                return buffer.reinterpret(sizeOut.get(JAVA_LONG, 0) + 1).getString(0);
            } finally {
                FREE.invokeExact(buffer);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("capturing a FILE* output failed", t);
        }
    }

    /**
     * Keeps the JVM's fault handlers when a library that loads UCX's libucs is about to load (libucp,
     * or NIXL's UCX plugin): libucs installs its own SIGSEGV/SIGBUS/SIGILL handlers unless
     * {@code UCX_ERROR_SIGNALS} is set, and those take over the signals HotSpot uses for safepoints and
     * implicit null checks, so the JVM aborts at random ({@code Caught signal 11} from
     * {@code ucs_handle_error}). Clears the list in the process environment unless the user chose a
     * value, as JUCX advises.
     *
     * @throws IllegalStateException when setenv fails: loading UCX then would endanger the JVM
     */
    public static void keepJvmFaultHandlersFromUcx() {
        if (System.getenv("UCX_ERROR_SIGNALS") == null) {
            setenv("UCX_ERROR_SIGNALS", "", false);
        }
    }
}
