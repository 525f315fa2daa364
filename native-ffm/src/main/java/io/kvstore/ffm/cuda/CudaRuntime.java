package io.kvstore.ffm.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The part of the CUDA runtime (libcudart) that memory tiers need: device count, pinned host memory
 * and device memory. Loaded on first use from {@code CUDA_HOME/lib64}, {@code /usr/local/cuda/lib64}
 * or the loader's paths; {@link #availability()} says why not when it cannot be used, and nothing here
 * throws at class load.
 */
public final class CudaRuntime {

    /** cudaHostAllocPortable | cudaHostAllocMapped: usable from every context, mapped for device access. */
    public static final int HOST_ALLOC_PORTABLE_MAPPED = 0x01 | 0x02;

    private static final class Holder {
        static final CudaRuntime INSTANCE;
        static final Availability AVAILABILITY;

        static {
            CudaRuntime runtime = null;
            Availability availability;
            try {
                runtime = new CudaRuntime(load());
                int devices = runtime.deviceCount();
                availability = Availability.available("libcudart at " + runtime.library.location()
                        + ", runtime " + runtime.runtimeVersion() + ", " + devices + " device(s)");
            } catch (LibraryUnavailableException | CudaException e) {
                availability = Availability.unavailable(e.getMessage());
                runtime = null;
            }
            INSTANCE = runtime;
            AVAILABILITY = availability;
        }
    }

    private final NativeLibrary library;
    private final MethodHandle getDeviceCount;
    private final MethodHandle runtimeGetVersion;
    private final MethodHandle hostAlloc;
    private final MethodHandle freeHost;
    private final MethodHandle malloc;
    private final MethodHandle free;
    private final MethodHandle getErrorName;
    private final MethodHandle getErrorString;

    private CudaRuntime(NativeLibrary library) {
        this.library = library;
        getDeviceCount = library.function("cudaGetDeviceCount", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        runtimeGetVersion = library.function("cudaRuntimeGetVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        hostAlloc = library.function("cudaHostAlloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        freeHost = library.function("cudaFreeHost", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        malloc = library.function("cudaMalloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        free = library.function("cudaFree", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        getErrorName = library.function("cudaGetErrorName", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        getErrorString = library.function("cudaGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    private static NativeLibrary load() {
        List<Path> dirs = new ArrayList<>();
        String cudaHome = System.getenv("CUDA_HOME");
        if (cudaHome != null && !cudaHome.isBlank()) {
            dirs.add(Path.of(cudaHome, "lib64"));
        }
        dirs.add(Path.of("/usr/local/cuda/lib64"));
        dirs.addAll(NativeLibrary.dirsFrom(System.getProperty("java.library.path")));
        return NativeLibrary.load("libcudart", dirs,
                List.of("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"));
    }

    /** Whether the CUDA runtime can be used here, with the library, version and device count, or why not. */
    public static Availability availability() {
        return Holder.AVAILABILITY;
    }

    /**
     * The loaded runtime.
     *
     * @throws LibraryUnavailableException with the reason when it is not available
     */
    public static CudaRuntime get() {
        if (Holder.INSTANCE == null) {
            throw new LibraryUnavailableException(Holder.AVAILABILITY.detail());
        }
        return Holder.INSTANCE;
    }

    public int deviceCount() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check("cudaGetDeviceCount()", (int) getDeviceCount.invokeExact(out));
            return out.get(JAVA_INT, 0);
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("cudaGetDeviceCount failed to run", t);
        }
    }

    public int runtimeVersion() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check("cudaRuntimeGetVersion()", (int) runtimeGetVersion.invokeExact(out));
            return out.get(JAVA_INT, 0);
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("cudaRuntimeGetVersion failed to run", t);
        }
    }

    /** Page-locked host memory of {@code bytes}, readable and writable from Java; free with {@link #freeHost}. */
    public MemorySegment hostAlloc(long bytes, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check("cudaHostAlloc(" + bytes + ", " + flags + ")", (int) hostAlloc.invokeExact(out, bytes, flags));
            return out.get(ADDRESS, 0).reinterpret(bytes);
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("cudaHostAlloc failed to run", t);
        }
    }

    public void freeHost(MemorySegment memory) {
        try {
            check("cudaFreeHost(" + memory.address() + ")", (int) freeHost.invokeExact(memory));
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("cudaFreeHost failed to run", t);
        }
    }

    /**
     * Device memory of {@code bytes}. The returned segment carries the device address and size only:
     * it must never be read or written from Java, only handed to CUDA or a transfer engine.
     */
    public MemorySegment malloc(long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check("cudaMalloc(" + bytes + ")", (int) malloc.invokeExact(out, bytes));
            return out.get(ADDRESS, 0).reinterpret(bytes);
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("cudaMalloc failed to run", t);
        }
    }

    public void free(MemorySegment deviceMemory) {
        try {
            check("cudaFree(" + deviceMemory.address() + ")", (int) free.invokeExact(deviceMemory));
        } catch (CudaException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("cudaFree failed to run", t);
        }
    }

    private void check(String call, int status) {
        if (status != 0) {
            throw new CudaException(call + " failed: " + errorName(status) + " (" + status + "): " + errorString(status));
        }
    }

    private String errorName(int status) {
        try {
            return ((MemorySegment) getErrorName.invokeExact(status)).reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "cudaError " + status;
        }
    }

    private String errorString(int status) {
        try {
            return ((MemorySegment) getErrorString.invokeExact(status)).reinterpret(1024).getString(0);
        } catch (Throwable t) {
            return "";
        }
    }
}
