package io.kvstore.ffm.libc;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The libc calls the NVMe tier needs, bound with FFM: open with O_DIRECT, positional reads and writes,
 * fallocate, fdatasync, mlock. Every call captures errno, and a failure becomes a {@link PosixException}
 * naming the call, its arguments (the path where there is one) and strerror. Linux x86-64/aarch64 flag values.
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
    /** errno: interrupted system call. */
    public static final int EINTR = 4;

    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option ERRNO_OPTION = Linker.Option.captureCallState("errno");
    private static final NativeLibrary LIBC = NativeLibrary.libc();

    private static final MethodHandle OPEN = LIBC.function(
            "open",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
            ERRNO_OPTION,
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE =
            LIBC.function("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), ERRNO_OPTION);
    private static final MethodHandle PREAD = LIBC.function(
            "pread", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), ERRNO_OPTION);
    private static final MethodHandle PWRITE = LIBC.function(
            "pwrite", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), ERRNO_OPTION);
    private static final MethodHandle FALLOCATE = LIBC.function(
            "fallocate", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), ERRNO_OPTION);
    private static final MethodHandle FTRUNCATE =
            LIBC.function("ftruncate", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG), ERRNO_OPTION);
    private static final MethodHandle FDATASYNC =
            LIBC.function("fdatasync", FunctionDescriptor.of(JAVA_INT, JAVA_INT), ERRNO_OPTION);
    private static final MethodHandle MLOCK =
            LIBC.function("mlock", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), ERRNO_OPTION);
    private static final MethodHandle MUNLOCK =
            LIBC.function("munlock", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), ERRNO_OPTION);
    private static final MethodHandle SETENV =
            LIBC.function("setenv", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    private static final MethodHandle STRERROR = LIBC.function("strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT));

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

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** open(2); returns the descriptor. */
    public static int open(String path, int flags, int mode) throws PosixException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(path), flags, mode);
            if (fd < 0) {
                throw new PosixException("open", path, "flags 0x" + Integer.toHexString(flags), errno(state));
            }
            return fd;
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("open(" + path + ") failed to run", t);
        }
    }

    public static void close(int fd) throws PosixException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            if ((int) CLOSE.invokeExact(state, fd) != 0) {
                throw new PosixException("close", "fd " + fd, "", errno(state));
            }
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("close(" + fd + ") failed to run", t);
        }
    }

    /**
     * Reads exactly {@code buffer.byteSize()} bytes at {@code offset}, retrying short reads and EINTR.
     *
     * @throws PosixException on an error, or when the file ends first (named as such)
     */
    public static void preadFully(int fd, MemorySegment buffer, long offset, String path) throws PosixException {
        long done = 0;
        long length = buffer.byteSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            while (done < length) {
                long n = (long) PREAD.invokeExact(state, fd, buffer.asSlice(done), length - done, offset + done);
                if (n < 0) {
                    int errno = errno(state);
                    if (errno == EINTR) {
                        continue;
                    }
                    throw new PosixException(
                            "pread", path, "offset " + (offset + done) + ", length " + (length - done), errno);
                }
                if (n == 0) {
                    throw new PosixException(
                            "pread",
                            path,
                            "offset " + (offset + done) + ": end of file before " + length + " bytes",
                            0);
                }
                done += n;
            }
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("pread(" + path + ") failed to run", t);
        }
    }

    /** Writes all of {@code buffer} at {@code offset}, retrying short writes and EINTR. */
    public static void pwriteFully(int fd, MemorySegment buffer, long offset, String path) throws PosixException {
        long done = 0;
        long length = buffer.byteSize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            while (done < length) {
                long n = (long) PWRITE.invokeExact(state, fd, buffer.asSlice(done), length - done, offset + done);
                if (n < 0) {
                    int errno = errno(state);
                    if (errno == EINTR) {
                        continue;
                    }
                    throw new PosixException(
                            "pwrite", path, "offset " + (offset + done) + ", length " + (length - done), errno);
                }
                done += n;
            }
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("pwrite(" + path + ") failed to run", t);
        }
    }

    /** fallocate(2) with mode 0: reserves the blocks so later writes cannot run out of space. */
    public static void fallocate(int fd, long offset, long length, String path) throws PosixException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            if ((int) FALLOCATE.invokeExact(state, fd, 0, offset, length) != 0) {
                throw new PosixException("fallocate", path, "offset " + offset + ", length " + length, errno(state));
            }
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fallocate(" + path + ") failed to run", t);
        }
    }

    public static void ftruncate(int fd, long length, String path) throws PosixException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            if ((int) FTRUNCATE.invokeExact(state, fd, length) != 0) {
                throw new PosixException("ftruncate", path, "length " + length, errno(state));
            }
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("ftruncate(" + path + ") failed to run", t);
        }
    }

    public static void fdatasync(int fd, String path) throws PosixException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            if ((int) FDATASYNC.invokeExact(state, fd) != 0) {
                throw new PosixException("fdatasync", path, "", errno(state));
            }
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fdatasync(" + path + ") failed to run", t);
        }
    }

    /**
     * setenv(3) in the process environment (which native libraries read; Java's own view of the
     * environment does not change). Does nothing when {@code overwrite} is false and the variable is set.
     */
    public static void setenv(String name, String value, boolean overwrite) {
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) SETENV.invokeExact(arena.allocateFrom(name), arena.allocateFrom(value), overwrite ? 1 : 0);
            if (rc != 0) {
                throw new IllegalStateException("setenv(" + name + ") failed");
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("setenv(" + name + ") failed to run", t);
        }
    }

    /** mlock(2): returns 0 on success, otherwise errno (the caller decides whether that is fatal). */
    public static int mlock(MemorySegment memory) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            return (int) MLOCK.invokeExact(state, memory, memory.byteSize()) == 0 ? 0 : errno(state);
        } catch (Throwable t) {
            throw new IllegalStateException("mlock failed to run", t);
        }
    }

    public static int munlock(MemorySegment memory) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            return (int) MUNLOCK.invokeExact(state, memory, memory.byteSize()) == 0 ? 0 : errno(state);
        } catch (Throwable t) {
            throw new IllegalStateException("munlock failed to run", t);
        }
    }
}
