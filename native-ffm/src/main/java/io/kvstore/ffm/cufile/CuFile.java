package io.kvstore.ffm.cufile;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.LazyBinding;
import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.NativeLibrary;
import io.kvstore.ffm.libc.Errno;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * cuFile (GPUDirect Storage, libcufile): DMA between NVMe files and GPU memory without a bounce
 * through host memory. Driver open/close, file handle and buffer registration, synchronous
 * read/write and, where the library has it, the batch API. Loaded on first use from
 * {@code CUDA_HOME/lib64}, {@code /usr/local/cuda/lib64}, {@code java.library.path} or the loader's
 * paths; {@link #availability()} says why not when it cannot be used.
 *
 * <p>Struct layouts follow cufile.h (CUDA 12.x/13.x, GDS 1.x), x86-64/aarch64 LP64:
 * {@code CUfileError_t} is {@code {CUfileOpError err; CUresult cu_err;}} (two 4-byte enums, returned
 * by value in a register pair); {@code CUfileDescr_t} is {@code {enum type; union {int fd; void *handle;}
 * handle; const CUfileFSOps_t *fs_ops;}}, so the union is pointer-aligned at offset 8 and the struct is
 * 24 bytes; {@code CUfileIOParams_t} is {@code {mode; union {struct {void *devPtr_base; off_t
 * file_offset; off_t devPtr_offset; size_t size;} batch;} u; CUfileHandle_t fh; CUfileOpcode_t opcode;
 * void *cookie;}} = 64 bytes; {@code CUfileIOEvents_t} is {@code {void *cookie; CUfileStatus_t status;
 * size_t ret;}} = 24 bytes.
 */
public final class CuFile {

    /** CU_FILE_HANDLE_TYPE_OPAQUE_FD: a Linux file descriptor. */
    static final int HANDLE_TYPE_OPAQUE_FD = 1;
    /** CUFILE_BATCH: the only CUfileBatchMode_t. */
    static final int BATCH_MODE = 1;
    /** CUFILE_READ / CUFILE_WRITE (CUfileOpcode_t). */
    static final int OPCODE_READ = 0;

    static final int OPCODE_WRITE = 1;

    /** CUfileError_t, returned by value. */
    static final StructLayout ERROR = MemoryLayout.structLayout(JAVA_INT.withName("err"), JAVA_INT.withName("cu_err"));
    /** CUfileDescr_t (cufile.h "typedef struct CUfileDescr_t"). */
    static final StructLayout DESCR = MemoryLayout.structLayout(
            JAVA_INT.withName("type"),
            MemoryLayout.paddingLayout(4),
            MemoryLayout.unionLayout(JAVA_INT.withName("fd"), ADDRESS.withName("handle"))
                    .withName("handle"),
            ADDRESS.withName("fs_ops"));
    /** CUfileIOParams_t (cufile.h batch API). */
    static final StructLayout IO_PARAMS = MemoryLayout.structLayout(
            JAVA_INT.withName("mode"),
            MemoryLayout.paddingLayout(4),
            MemoryLayout.structLayout(
                            ADDRESS.withName("devPtr_base"),
                            JAVA_LONG.withName("file_offset"),
                            JAVA_LONG.withName("devPtr_offset"),
                            JAVA_LONG.withName("size"))
                    .withName("batch"),
            ADDRESS.withName("fh"),
            JAVA_INT.withName("opcode"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("cookie"));
    /** CUfileIOEvents_t (cufile.h batch API). */
    static final StructLayout IO_EVENTS = MemoryLayout.structLayout(
            ADDRESS.withName("cookie"),
            JAVA_INT.withName("status"),
            MemoryLayout.paddingLayout(4),
            JAVA_LONG.withName("ret"));

    private static final VarHandle ERR = ERROR.varHandle(MemoryLayout.PathElement.groupElement("err"));
    private static final VarHandle CU_ERR = ERROR.varHandle(MemoryLayout.PathElement.groupElement("cu_err"));

    private static final LazyBinding<CuFile> BINDING = LazyBinding.of(() -> {
        CuFile cufile = new CuFile(load());
        return new LazyBinding.Loaded<>(
                cufile,
                "libcufile at " + cufile.library.location()
                        + cufile.version().map(v -> ", cuFileGetVersion " + v).orElse("")
                        + (cufile.batchSetUp.isPresent() ? ", batch API" : ", no batch API"));
    });

    private final NativeLibrary library;
    private final MethodHandle driverOpen;
    private final MethodHandle driverClose;
    private final MethodHandle handleRegister;
    private final MethodHandle handleDeregister;
    private final MethodHandle bufRegister;
    private final MethodHandle bufDeregister;
    private final MethodHandle read;
    private final MethodHandle write;
    private final Optional<MethodHandle> getVersion;
    private final Optional<MethodHandle> batchSetUp;
    private final Optional<MethodHandle> batchSubmit;
    private final Optional<MethodHandle> batchGetStatus;
    private final Optional<MethodHandle> batchCancel;
    private final Optional<MethodHandle> batchDestroy;

    private CuFile(NativeLibrary library) {
        this.library = library;
        FunctionDescriptor errOfNothing = FunctionDescriptor.of(ERROR);
        driverOpen = library.function("cuFileDriverOpen", errOfNothing);
        // cufile.h: "#define cuFileDriverClose cuFileDriverClose_v2" since GDS 1.7; older libraries export only the
        // plain name
        driverClose = library.optionalFunction("cuFileDriverClose_v2", errOfNothing)
                .orElseGet(() -> library.function("cuFileDriverClose", errOfNothing));
        handleRegister = library.function("cuFileHandleRegister", FunctionDescriptor.of(ERROR, ADDRESS, ADDRESS));
        handleDeregister = library.function("cuFileHandleDeregister", FunctionDescriptor.ofVoid(ADDRESS));
        bufRegister = library.function("cuFileBufRegister", FunctionDescriptor.of(ERROR, ADDRESS, JAVA_LONG, JAVA_INT));
        bufDeregister = library.function("cuFileBufDeregister", FunctionDescriptor.of(ERROR, ADDRESS));
        FunctionDescriptor io = FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG);
        read = library.function("cuFileRead", io, Errno.CAPTURE);
        write = library.function("cuFileWrite", io, Errno.CAPTURE);
        getVersion = library.optionalFunction("cuFileGetVersion", FunctionDescriptor.of(ERROR, ADDRESS));
        batchSetUp = library.optionalFunction("cuFileBatchIOSetUp", FunctionDescriptor.of(ERROR, ADDRESS, JAVA_INT));
        batchSubmit = library.optionalFunction(
                "cuFileBatchIOSubmit", FunctionDescriptor.of(ERROR, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT));
        batchGetStatus = library.optionalFunction(
                "cuFileBatchIOGetStatus", FunctionDescriptor.of(ERROR, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        batchCancel = library.optionalFunction("cuFileBatchIOCancel", FunctionDescriptor.of(ERROR, ADDRESS));
        batchDestroy = library.optionalFunction("cuFileBatchIODestroy", FunctionDescriptor.ofVoid(ADDRESS));
    }

    /** Where libcufile is looked for, in order, before the loader's own paths. */
    static List<Path> searchDirs() {
        List<Path> dirs = new ArrayList<>();
        String cudaHome = System.getenv("CUDA_HOME");
        if (cudaHome != null && !cudaHome.isBlank()) {
            dirs.add(Path.of(cudaHome, "lib64"));
        }
        dirs.add(Path.of("/usr/local/cuda/lib64"));
        dirs.addAll(NativeLibrary.dirsFrom(System.getProperty("java.library.path")));
        return dirs;
    }

    private static NativeLibrary load() {
        return NativeLibrary.load(
                "libcufile", searchDirs(), List.of("libcufile.so", "libcufile.so.0", "libcufile.so.1"));
    }

    /** Whether cuFile can be used here, with the library, version and batch support, or why not. */
    public static Availability availability() {
        return BINDING.availability();
    }

    /**
     * The loaded library.
     *
     * @throws LibraryUnavailableException with the reason when it is not available
     */
    public static CuFile get() {
        return BINDING.get();
    }

    /** cuFileGetVersion's answer, when the library has the call and it succeeds. */
    public Optional<Integer> version() {
        return getVersion.flatMap(handle -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(JAVA_INT);
                MemorySegment error = (MemorySegment) handle.invokeExact((SegmentAllocator) arena, out);
                return (int) ERR.get(error, 0L) == 0 ? Optional.of(out.get(JAVA_INT, 0)) : Optional.empty();
            } catch (Throwable t) {
                return Optional.empty();
            }
        });
    }

    /** Whether the batch API (cuFileBatchIO*) is present. */
    public boolean hasBatchApi() {
        return batchSetUp.isPresent()
                && batchSubmit.isPresent()
                && batchGetStatus.isPresent()
                && batchCancel.isPresent()
                && batchDestroy.isPresent();
    }

    /** Opens the GDS driver (nvidia-fs, or compatibility mode when cufile.json allows it); reference counted by cuFile. */
    public void driverOpen() {
        check("cuFileDriverOpen()", arena -> (MemorySegment) driverOpen.invokeExact((SegmentAllocator) arena));
    }

    public void driverClose() {
        check("cuFileDriverClose()", arena -> (MemorySegment) driverClose.invokeExact((SegmentAllocator) arena));
    }

    /** Registers an open file descriptor (opened with O_DIRECT for true GDS) for cuFile I/O. */
    public CuFileHandle register(int fd, String path) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment descr = arena.allocate(DESCR);
            descr.set(JAVA_INT, DESCR.byteOffset(MemoryLayout.PathElement.groupElement("type")), HANDLE_TYPE_OPAQUE_FD);
            descr.set(JAVA_INT, DESCR.byteOffset(MemoryLayout.PathElement.groupElement("handle")), fd);
            MemorySegment out = arena.allocate(ADDRESS);
            try {
                check("cuFileHandleRegister(fd " + fd + ", " + path + ")", a ->
                        (MemorySegment) handleRegister.invokeExact((SegmentAllocator) a, out, descr));
            } catch (CuFileException refused) {
                throw explained(refused);
            }
            return new CuFileHandle(this, out.get(ADDRESS, 0), fd, path);
        }
    }

    /**
     * {@code refused}, with where to look and the usual cause when it is a file cuFile could not register: cuFile
     * looks the file's block device up in udev's database, which a container or VM without udev lacks (seen on a
     * GPU VM: every registration failed so, compatibility mode or not; docs/nvme.md).
     */
    static CuFileException explained(CuFileException refused) {
        if (refused.error() != CuFileStatus.HANDLE_NOT_REGISTERED) {
            return refused;
        }
        return new CuFileException(
                refused.getMessage()
                        + "; cufile.log says why. Often cuFile cannot describe the file's block device: udev has no"
                        + " entry for it under /run/udev (a container without the host's /run/udev mounted, a VM"
                        + " without udev)",
                refused.error());
    }

    void deregister(MemorySegment handle) {
        try {
            handleDeregister.invokeExact(handle);
        } catch (Throwable t) {
            throw new IllegalStateException("cuFileHandleDeregister could not be invoked", t);
        }
    }

    /** Registers a GPU buffer so reads and writes into it skip cuFile's internal bounce buffers. */
    public void registerBuffer(MemorySegment deviceBuffer, int flags) {
        long length = deviceBuffer.byteSize();
        check(
                "cuFileBufRegister(0x" + Long.toHexString(deviceBuffer.address()) + ", " + length + ", " + flags + ")",
                arena ->
                        (MemorySegment) bufRegister.invokeExact((SegmentAllocator) arena, deviceBuffer, length, flags));
    }

    public void deregisterBuffer(MemorySegment deviceBuffer) {
        check("cuFileBufDeregister(0x" + Long.toHexString(deviceBuffer.address()) + ")", arena ->
                (MemorySegment) bufDeregister.invokeExact((SegmentAllocator) arena, deviceBuffer));
    }

    /**
     * Reads {@code size} bytes at {@code fileOffset} into {@code buffer + bufferOffset}; {@code buffer} is
     * the base of a (registered) device allocation. Returns the bytes read, fewer only at end of file.
     */
    public long read(CuFileHandle file, MemorySegment buffer, long size, long fileOffset, long bufferOffset) {
        return io("cuFileRead", read, file, buffer, size, fileOffset, bufferOffset);
    }

    /** Writes {@code size} bytes from {@code buffer + bufferOffset} at {@code fileOffset}; returns the bytes written. */
    public long write(CuFileHandle file, MemorySegment buffer, long size, long fileOffset, long bufferOffset) {
        return io("cuFileWrite", write, file, buffer, size, fileOffset, bufferOffset);
    }

    private long io(
            String name,
            MethodHandle call,
            CuFileHandle file,
            MemorySegment buffer,
            long size,
            long fileOffset,
            long bufferOffset) {
        if (size < 0 || bufferOffset < 0 || fileOffset < 0 || bufferOffset + size > buffer.byteSize()) {
            throw new IllegalArgumentException(name + " of " + size + " bytes at buffer offset " + bufferOffset
                    + " does not fit the " + buffer.byteSize() + "-byte buffer (file offset " + fileOffset + ")");
        }
        String what = name + "(" + file + ", buffer 0x" + Long.toHexString(buffer.address()) + ", " + size
                + " bytes, file offset " + fileOffset + ", buffer offset " + bufferOffset + ")";
        MemorySegment state = Errno.state();
        long result;
        try {
            result = (long) call.invokeExact(state, file.handle(), buffer, size, fileOffset, bufferOffset);
        } catch (Throwable t) {
            throw new IllegalStateException(what + " could not be invoked", t);
        }
        if (result == -1) {
            int errno = Errno.of(state);
            throw new CuFileException(what + " failed: errno " + errno, errno);
        }
        if (result < 0) {
            throw new CuFileException(
                    what + " failed: " + CuFileStatus.name((int) -result) + " (" + -result + ")", (int) -result);
        }
        return result;
    }

    /**
     * A batch context for up to {@code capacity} I/Os in flight.
     *
     * @throws UnsupportedOperationException when this libcufile has no batch API
     */
    public CuFileBatch batch(int capacity) {
        if (!hasBatchApi()) {
            throw new UnsupportedOperationException(
                    "libcufile at " + library.location() + " has no batch API (cuFileBatchIOSetUp)");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            MethodHandle setUp = batchSetUp.orElseThrow();
            check("cuFileBatchIOSetUp(" + capacity + ")", a ->
                    (MemorySegment) setUp.invokeExact((SegmentAllocator) a, out, capacity));
            return new CuFileBatch(this, out.get(ADDRESS, 0), capacity);
        }
    }

    void batchSubmit(MemorySegment batch, int count, MemorySegment params) {
        MethodHandle submit = batchSubmit.orElseThrow();
        check("cuFileBatchIOSubmit(" + count + " I/Os)", a ->
                (MemorySegment) submit.invokeExact((SegmentAllocator) a, batch, count, params, 0));
    }

    void batchGetStatus(
            MemorySegment batch, int minimum, MemorySegment count, MemorySegment events, MemorySegment timeout) {
        MethodHandle status = batchGetStatus.orElseThrow();
        check("cuFileBatchIOGetStatus(min " + minimum + ")", a ->
                (MemorySegment) status.invokeExact((SegmentAllocator) a, batch, minimum, count, events, timeout));
    }

    void batchCancel(MemorySegment batch) {
        MethodHandle cancel = batchCancel.orElseThrow();
        check("cuFileBatchIOCancel()", a -> (MemorySegment) cancel.invokeExact((SegmentAllocator) a, batch));
    }

    void batchDestroy(MemorySegment batch) {
        try {
            batchDestroy.orElseThrow().invokeExact(batch);
        } catch (Throwable t) {
            throw new IllegalStateException("cuFileBatchIODestroy could not be invoked", t);
        }
    }

    @FunctionalInterface
    private interface ErrorCall {
        MemorySegment invoke(Arena arena) throws Throwable;
    }

    private static void check(String call, ErrorCall body) {
        int err;
        int cuErr;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment error = body.invoke(arena);
            err = (int) ERR.get(error, 0L);
            cuErr = (int) CU_ERR.get(error, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException(call + " could not be invoked", t);
        }
        if (err != 0) {
            String cuda = err == CuFileStatus.CUDA_DRIVER_ERROR ? ", CUresult " + cuErr : "";
            throw new CuFileException(call + " failed: " + CuFileStatus.name(err) + " (" + err + ")" + cuda, err);
        }
    }
}
