package io.kvstore.ffm.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.LazyBinding;
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
 * The part of the CUDA runtime (libcudart) that tiers and transfers need: devices and their
 * properties, device and pinned host memory, host registration, copies, streams and events, and
 * error names. Loaded on first use from {@code CUDA_HOME/lib64}, {@code /usr/local/cuda/lib64},
 * {@code java.library.path} or the loader's paths; {@link #availability()} says why not when it
 * cannot be used, and nothing here throws at class load.
 *
 * <p>Device properties come from {@code cudaDeviceGetAttribute} and {@code cudaMemGetInfo} rather
 * than the {@code cudaDeviceProp} struct, whose layout changes between CUDA releases; only the name,
 * the struct's first field ({@code char name[256]} at offset 0 in every release), is read from it.
 */
public final class CudaRuntime {

    /** cudaHostAllocPortable | cudaHostAllocMapped: usable from every context, mapped for device access. */
    public static final int HOST_ALLOC_PORTABLE_MAPPED = 0x01 | 0x02;
    /** cudaHostRegisterPortable: the registration is seen by every CUDA context. */
    public static final int HOST_REGISTER_PORTABLE = 0x01;
    /** cudaHostRegisterMapped: the registered memory is also mapped into the device address space. */
    public static final int HOST_REGISTER_MAPPED = 0x02;
    /** cudaStreamNonBlocking: the stream does not synchronise with the legacy default stream. */
    public static final int STREAM_NON_BLOCKING = 0x01;
    /** cudaEventDefault: an event that records timing. */
    public static final int EVENT_DEFAULT = 0x00;
    /** cudaEventDisableTiming: cheaper event for synchronisation only. */
    public static final int EVENT_DISABLE_TIMING = 0x02;
    /** cudaErrorNotReady: a query found work still pending (not a failure). */
    public static final int ERROR_NOT_READY = 600;
    /** cudaDevAttrMultiProcessorCount. */
    public static final int ATTR_MULTIPROCESSOR_COUNT = 16;
    /** cudaDevAttrPciBusId. */
    public static final int ATTR_PCI_BUS_ID = 33;
    /** cudaDevAttrPciDeviceId. */
    public static final int ATTR_PCI_DEVICE_ID = 34;
    /** cudaDevAttrUnifiedAddressing: host and device share one virtual address space. */
    public static final int ATTR_UNIFIED_ADDRESSING = 41;
    /** cudaDevAttrComputeCapabilityMajor. */
    public static final int ATTR_COMPUTE_CAPABILITY_MAJOR = 75;
    /** cudaDevAttrComputeCapabilityMinor. */
    public static final int ATTR_COMPUTE_CAPABILITY_MINOR = 76;

    /** Bytes set aside for cudaDeviceProp: ~1 KiB in CUDA 12/13, padded so a larger future struct still fits. */
    private static final long DEVICE_PROP_BYTES = 4096;

    private static final long DEVICE_NAME_BYTES = 256;

    /** Direction of a copy (cudaMemcpyKind). */
    public enum CopyKind {
        HOST_TO_HOST(0),
        HOST_TO_DEVICE(1),
        DEVICE_TO_HOST(2),
        DEVICE_TO_DEVICE(3),
        DEFAULT(4);

        final int value;

        CopyKind(int value) {
            this.value = value;
        }
    }

    private static final LazyBinding<CudaRuntime> BINDING = LazyBinding.of(CudaRuntime::loadRuntime);

    private static LazyBinding.Loaded<CudaRuntime> loadRuntime() {
        CudaRuntime runtime = new CudaRuntime(load());
        int devices;
        try {
            devices = runtime.deviceCount();
        } catch (CudaException e) {
            // loaded, but no usable driver or device: say which library answered
            throw new LibraryUnavailableException(
                    "libcudart at " + runtime.library.location() + " loaded, but " + e.getMessage());
        }
        return new LazyBinding.Loaded<>(
                runtime,
                "libcudart at " + runtime.library.location() + ", runtime " + version(runtime.runtimeVersion())
                        + ", driver " + version(runtime.driverVersion()) + ", " + devices + " device(s)");
    }

    @FunctionalInterface
    private interface Call {
        int invoke(Arena arena) throws Throwable;
    }

    private final NativeLibrary library;
    private final MethodHandle getDeviceCount;
    private final MethodHandle runtimeGetVersion;
    private final MethodHandle driverGetVersion;
    private final MethodHandle setDevice;
    private final MethodHandle getDevice;
    private final MethodHandle deviceGetAttribute;
    private final MethodHandle getDeviceProperties;
    private final MethodHandle memGetInfo;
    private final MethodHandle deviceSynchronize;
    private final MethodHandle hostAlloc;
    private final MethodHandle freeHost;
    private final MethodHandle hostRegister;
    private final MethodHandle hostUnregister;
    private final MethodHandle malloc;
    private final MethodHandle free;
    private final MethodHandle memcpy;
    private final MethodHandle memcpyAsync;
    private final MethodHandle memset;
    private final MethodHandle streamCreateWithFlags;
    private final MethodHandle streamSynchronize;
    private final MethodHandle streamQuery;
    private final MethodHandle streamDestroy;
    private final MethodHandle eventCreateWithFlags;
    private final MethodHandle eventRecord;
    private final MethodHandle eventSynchronize;
    private final MethodHandle eventQuery;
    private final MethodHandle eventElapsedTime;
    private final MethodHandle eventDestroy;
    private final MethodHandle getErrorName;
    private final MethodHandle getErrorString;

    private CudaRuntime(NativeLibrary library) {
        this.library = library;
        FunctionDescriptor intOfPtr = FunctionDescriptor.of(JAVA_INT, ADDRESS);
        FunctionDescriptor intOfInt = FunctionDescriptor.of(JAVA_INT, JAVA_INT);
        FunctionDescriptor intOfNothing = FunctionDescriptor.of(JAVA_INT);
        getDeviceCount = library.function("cudaGetDeviceCount", intOfPtr);
        runtimeGetVersion = library.function("cudaRuntimeGetVersion", intOfPtr);
        driverGetVersion = library.function("cudaDriverGetVersion", intOfPtr);
        setDevice = library.function("cudaSetDevice", intOfInt);
        getDevice = library.function("cudaGetDevice", intOfPtr);
        deviceGetAttribute = library.function(
                "cudaDeviceGetAttribute", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        // CUDA 12 headers map cudaGetDeviceProperties to the _v2 symbol; older runtimes export only the plain one.
        FunctionDescriptor props = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT);
        getDeviceProperties = library.optionalFunction("cudaGetDeviceProperties_v2", props)
                .orElseGet(() -> library.function("cudaGetDeviceProperties", props));
        memGetInfo = library.function("cudaMemGetInfo", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        deviceSynchronize = library.function("cudaDeviceSynchronize", intOfNothing);
        hostAlloc = library.function("cudaHostAlloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        freeHost = library.function("cudaFreeHost", intOfPtr);
        hostRegister =
                library.function("cudaHostRegister", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        hostUnregister = library.function("cudaHostUnregister", intOfPtr);
        malloc = library.function("cudaMalloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        free = library.function("cudaFree", intOfPtr);
        memcpy = library.function("cudaMemcpy", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
        memcpyAsync = library.function(
                "cudaMemcpyAsync", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS));
        memset = library.function("cudaMemset", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG));
        streamCreateWithFlags =
                library.function("cudaStreamCreateWithFlags", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        streamSynchronize = library.function("cudaStreamSynchronize", intOfPtr);
        streamQuery = library.function("cudaStreamQuery", intOfPtr);
        streamDestroy = library.function("cudaStreamDestroy", intOfPtr);
        eventCreateWithFlags =
                library.function("cudaEventCreateWithFlags", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        eventRecord = library.function("cudaEventRecord", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        eventSynchronize = library.function("cudaEventSynchronize", intOfPtr);
        eventQuery = library.function("cudaEventQuery", intOfPtr);
        eventElapsedTime =
                library.function("cudaEventElapsedTime", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        eventDestroy = library.function("cudaEventDestroy", intOfPtr);
        getErrorName = library.function("cudaGetErrorName", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        getErrorString = library.function("cudaGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    /** Where libcudart is looked for, in order, before the loader's own paths. */
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
                "libcudart",
                searchDirs(),
                List.of("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"));
    }

    private static String version(int encoded) {
        return encoded / 1000 + "." + (encoded % 1000) / 10;
    }

    /** Whether the CUDA runtime can be used here, with the library, versions and device count, or why not. */
    public static Availability availability() {
        return BINDING.availability();
    }

    /**
     * The loaded runtime.
     *
     * @throws LibraryUnavailableException with the reason when it is not available
     */
    public static CudaRuntime get() {
        return BINDING.get();
    }

    public int deviceCount() {
        return intOut("cudaGetDeviceCount()", out -> (int) getDeviceCount.invokeExact(out));
    }

    /** The runtime version as CUDA encodes it (1000 * major + 10 * minor). */
    public int runtimeVersion() {
        return intOut("cudaRuntimeGetVersion()", out -> (int) runtimeGetVersion.invokeExact(out));
    }

    /** The newest CUDA version the installed driver supports (1000 * major + 10 * minor), 0 without a driver. */
    public int driverVersion() {
        return intOut("cudaDriverGetVersion()", out -> (int) driverGetVersion.invokeExact(out));
    }

    /** Makes {@code device} current for the calling thread. */
    public void setDevice(int device) {
        check("cudaSetDevice(" + device + ")", arena -> (int) setDevice.invokeExact(device));
    }

    /** The calling thread's current device. */
    public int currentDevice() {
        return intOut("cudaGetDevice()", out -> (int) getDevice.invokeExact(out));
    }

    /** One cudaDeviceAttr value ({@code ATTR_*}) of {@code device}. */
    public int deviceAttribute(int attribute, int device) {
        return intOut("cudaDeviceGetAttribute(" + attribute + ", " + device + ")", out ->
                (int) deviceGetAttribute.invokeExact(out, attribute, device));
    }

    /** The device's name, compute capability, SM count, PCI location and memory. */
    public CudaDeviceProperties properties(int device) {
        String name;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment prop = arena.allocate(DEVICE_PROP_BYTES, 8);
            check("cudaGetDeviceProperties(" + device + ")", a -> (int) getDeviceProperties.invokeExact(prop, device));
            name = prop.asSlice(0, DEVICE_NAME_BYTES).getString(0);
        }
        long[] memory = memoryInfo(device);
        return new CudaDeviceProperties(
                device,
                name,
                deviceAttribute(ATTR_COMPUTE_CAPABILITY_MAJOR, device),
                deviceAttribute(ATTR_COMPUTE_CAPABILITY_MINOR, device),
                deviceAttribute(ATTR_MULTIPROCESSOR_COUNT, device),
                deviceAttribute(ATTR_PCI_BUS_ID, device),
                deviceAttribute(ATTR_PCI_DEVICE_ID, device),
                memory[1],
                memory[0]);
    }

    /** {free, total} bytes of {@code device}'s memory; the calling thread's current device is left as it was. */
    public long[] memoryInfo(int device) {
        int previous = currentDevice();
        setDevice(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(JAVA_LONG);
            MemorySegment total = arena.allocate(JAVA_LONG);
            check("cudaMemGetInfo(device " + device + ")", a -> (int) memGetInfo.invokeExact(free, total));
            return new long[] {free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0)};
        } finally {
            setDevice(previous);
        }
    }

    /** Waits for all work on the current device. */
    public void deviceSynchronize() {
        check("cudaDeviceSynchronize()", arena -> (int) deviceSynchronize.invokeExact());
    }

    /** Page-locked host memory of {@code bytes}, readable and writable from Java; free with {@link #freeHost}. */
    public MemorySegment hostAlloc(long bytes, int flags) {
        return pointerOut("cudaHostAlloc(" + bytes + ", " + flags + ")", out ->
                        (int) hostAlloc.invokeExact(out, bytes, flags))
                .reinterpret(bytes);
    }

    public void freeHost(MemorySegment memory) {
        check("cudaFreeHost(0x" + Long.toHexString(memory.address()) + ")", arena ->
                (int) freeHost.invokeExact(memory));
    }

    /** Page-locks existing host memory (e.g. a slab the DRAM tier already owns) so copies to the device run at full speed. */
    public void hostRegister(MemorySegment memory, int flags) {
        check(
                "cudaHostRegister(0x" + Long.toHexString(memory.address()) + ", " + memory.byteSize() + ", " + flags
                        + ")",
                arena -> (int) hostRegister.invokeExact(memory, memory.byteSize(), flags));
    }

    public void hostUnregister(MemorySegment memory) {
        check("cudaHostUnregister(0x" + Long.toHexString(memory.address()) + ")", arena ->
                (int) hostUnregister.invokeExact(memory));
    }

    /**
     * Device memory of {@code bytes}. The returned segment carries the device address and size only:
     * it must never be read or written from Java, only handed to CUDA or a transfer engine.
     */
    public MemorySegment malloc(long bytes) {
        return pointerOut("cudaMalloc(" + bytes + ")", out -> (int) malloc.invokeExact(out, bytes))
                .reinterpret(bytes);
    }

    public void free(MemorySegment deviceMemory) {
        check("cudaFree(0x" + Long.toHexString(deviceMemory.address()) + ")", arena ->
                (int) free.invokeExact(deviceMemory));
    }

    /** Copies {@code bytes} from {@code source} to {@code target} and waits for the copy. */
    public void memcpy(MemorySegment target, MemorySegment source, long bytes, CopyKind kind) {
        checkRange(target, source, bytes);
        check("cudaMemcpy(" + bytes + " bytes, " + kind + ")", arena ->
                (int) memcpy.invokeExact(target, source, bytes, kind.value));
    }

    /**
     * Queues a copy of {@code bytes} on {@code stream} and returns at once; host memory must be pinned
     * for the copy to be asynchronous.
     */
    public void memcpyAsync(MemorySegment target, MemorySegment source, long bytes, CopyKind kind, CudaStream stream) {
        checkRange(target, source, bytes);
        MemorySegment handle = stream.handle();
        check("cudaMemcpyAsync(" + bytes + " bytes, " + kind + ", " + stream + ")", arena ->
                (int) memcpyAsync.invokeExact(target, source, bytes, kind.value, handle));
    }

    /** Sets {@code bytes} of device memory to {@code value}. */
    public void memset(MemorySegment deviceMemory, int value, long bytes) {
        if (bytes > deviceMemory.byteSize()) {
            throw new IllegalArgumentException(
                    "cudaMemset of " + bytes + " bytes exceeds the " + deviceMemory.byteSize() + "-byte region");
        }
        check("cudaMemset(" + value + ", " + bytes + ")", arena ->
                (int) memset.invokeExact(deviceMemory, value, bytes));
    }

    private static void checkRange(MemorySegment target, MemorySegment source, long bytes) {
        if (bytes < 0 || bytes > target.byteSize() || bytes > source.byteSize()) {
            throw new IllegalArgumentException("copy of " + bytes + " bytes does not fit the source ("
                    + source.byteSize() + " bytes) or the target (" + target.byteSize() + " bytes)");
        }
    }

    /** A new stream; {@code flags} is 0 or {@link #STREAM_NON_BLOCKING}. */
    public CudaStream createStream(int flags) {
        return new CudaStream(this, pointerOut("cudaStreamCreateWithFlags(" + flags + ")", out ->
                (int) streamCreateWithFlags.invokeExact(out, flags)));
    }

    void synchronize(CudaStream stream) {
        MemorySegment handle = stream.handle();
        check("cudaStreamSynchronize(" + stream + ")", arena -> (int) streamSynchronize.invokeExact(handle));
    }

    boolean isIdle(CudaStream stream) {
        MemorySegment handle = stream.handle();
        return ready("cudaStreamQuery(" + stream + ")", () -> (int) streamQuery.invokeExact(handle));
    }

    void destroyStream(MemorySegment handle, String name) {
        check("cudaStreamDestroy(" + name + ")", arena -> (int) streamDestroy.invokeExact(handle));
    }

    /** A new event; {@code flags} is {@link #EVENT_DEFAULT} or {@link #EVENT_DISABLE_TIMING}. */
    public CudaEvent createEvent(int flags) {
        return new CudaEvent(this, pointerOut("cudaEventCreateWithFlags(" + flags + ")", out ->
                (int) eventCreateWithFlags.invokeExact(out, flags)));
    }

    void record(CudaEvent event, CudaStream stream) {
        MemorySegment e = event.handle();
        MemorySegment s = stream.handle();
        check("cudaEventRecord(" + event + ", " + stream + ")", arena -> (int) eventRecord.invokeExact(e, s));
    }

    void synchronize(CudaEvent event) {
        MemorySegment e = event.handle();
        check("cudaEventSynchronize(" + event + ")", arena -> (int) eventSynchronize.invokeExact(e));
    }

    boolean isComplete(CudaEvent event) {
        MemorySegment e = event.handle();
        return ready("cudaEventQuery(" + event + ")", () -> (int) eventQuery.invokeExact(e));
    }

    float elapsedMillis(CudaEvent start, CudaEvent end) {
        MemorySegment s = start.handle();
        MemorySegment e = end.handle();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(java.lang.foreign.ValueLayout.JAVA_FLOAT);
            check("cudaEventElapsedTime(" + start + ", " + end + ")", a ->
                    (int) eventElapsedTime.invokeExact(out, s, e));
            return out.get(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0);
        }
    }

    void destroyEvent(MemorySegment handle, String name) {
        check("cudaEventDestroy(" + name + ")", arena -> (int) eventDestroy.invokeExact(handle));
    }

    /** The cudaError_t name of {@code status}, e.g. {@code cudaErrorInvalidValue}. */
    public String errorName(int status) {
        try {
            return ((MemorySegment) getErrorName.invokeExact(status))
                    .reinterpret(256)
                    .getString(0);
        } catch (Throwable t) {
            return "cudaError " + status;
        }
    }

    /** The runtime's description of {@code status}. */
    public String errorString(int status) {
        try {
            return ((MemorySegment) getErrorString.invokeExact(status))
                    .reinterpret(1024)
                    .getString(0);
        } catch (Throwable t) {
            return "";
        }
    }

    @FunctionalInterface
    private interface OutCall {
        int invoke(MemorySegment out) throws Throwable;
    }

    @FunctionalInterface
    private interface StatusCall {
        int invoke() throws Throwable;
    }

    private int intOut(String call, OutCall body) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check(call, a -> body.invoke(out));
            return out.get(JAVA_INT, 0);
        }
    }

    private MemorySegment pointerOut(String call, OutCall body) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(call, a -> body.invoke(out));
            return out.get(ADDRESS, 0);
        }
    }

    /** True when the query says done, false for cudaErrorNotReady, an exception for anything else. */
    private boolean ready(String call, StatusCall body) {
        int status;
        try {
            status = body.invoke();
        } catch (Throwable t) {
            throw new IllegalStateException(call + " could not be invoked", t);
        }
        if (status == ERROR_NOT_READY) {
            return false;
        }
        if (status != 0) {
            throw new CudaException(call, status, errorName(status), errorString(status));
        }
        return true;
    }

    private void check(String call, Call body) {
        int status;
        try (Arena arena = Arena.ofConfined()) {
            status = body.invoke(arena);
        } catch (Throwable t) {
            throw new IllegalStateException(call + " could not be invoked", t);
        }
        if (status != 0) {
            throw new CudaException(call, status, errorName(status), errorString(status));
        }
    }
}
