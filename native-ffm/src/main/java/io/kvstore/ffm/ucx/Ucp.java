package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.NativeLibrary;
import io.kvstore.ffm.libc.LibC;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.List;

/**
 * Hand-written bindings of UCX's UCP API (Debian's libucx0 1.13): contexts, workers, endpoints, memory
 * registration, remote keys, one-sided put/get and flush. Raw calls only; {@link UcpContext},
 * {@link UcpWorker}, {@link UcpEndpoint} and {@link UcpMemory} wrap them with ownership and errors.
 *
 * <p>Struct layouts follow ucp.h of UCX 1.13 on LP64 (sizes 80, 200, 104, 72, 40 bytes);
 * {@code UcpLayoutTest} compiles a C program against the installed headers and compares every size and
 * offset used here.
 */
public final class Ucp {

    static final int API_MAJOR = 1;
    static final int API_MINOR = 13;

    /** ucp_feature: tag matching. */
    public static final long FEATURE_TAG = 1L;
    /** ucp_feature: remote memory access (put/get). */
    public static final long FEATURE_RMA = 1L << 1;
    /** ucp_feature: active messages. */
    public static final long FEATURE_AM = 1L << 6;

    static final long PARAM_FIELD_FEATURES = 1L;
    static final long WORKER_PARAM_FIELD_THREAD_MODE = 1L;
    /** UCS_THREAD_MODE_MULTI: any thread may call into the worker. */
    static final int THREAD_MODE_MULTI = 2;
    static final long EP_PARAM_FIELD_REMOTE_ADDRESS = 1L;
    static final long EP_PARAM_FIELD_ERR_HANDLING_MODE = 1L << 1;
    /** UCP_ERR_HANDLING_MODE_PEER: a failed peer fails its requests instead of hanging them. */
    static final int ERR_HANDLING_MODE_PEER = 1;
    static final long MEM_MAP_PARAM_FIELD_ADDRESS = 1L;
    static final long MEM_MAP_PARAM_FIELD_LENGTH = 1L << 1;
    static final int EP_CLOSE_FLAG_FORCE = 1;
    static final int OP_ATTR_FIELD_FLAGS = 1 << 4;

    /** UCS_OK. */
    public static final int OK = 0;
    /** UCS_INPROGRESS. */
    public static final int IN_PROGRESS = 1;
    /** UCS_ERR_LAST: pointers in [-100, -1] returned as ucs_status_ptr_t are error codes. */
    static final long ERR_LAST = -100;

    /** ucp_params_t: field_mask@0, features@8, ... 80 bytes. */
    public static final StructLayout PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"), JAVA_LONG.withName("features"), MemoryLayout.paddingLayout(64));
    /** ucp_worker_params_t: field_mask@0, thread_mode@8, ... 200 bytes. */
    public static final StructLayout WORKER_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"), JAVA_INT.withName("thread_mode"), MemoryLayout.paddingLayout(188));
    /** ucp_ep_params_t: field_mask@0, address@8, err_mode@16, ... 104 bytes. */
    public static final StructLayout EP_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"), ADDRESS.withName("address"), JAVA_INT.withName("err_mode"),
            MemoryLayout.paddingLayout(84));
    /** ucp_request_param_t: op_attr_mask@0, flags@4, request@8, cb@16, ... 72 bytes. */
    public static final StructLayout REQUEST_PARAM = MemoryLayout.structLayout(
            JAVA_INT.withName("op_attr_mask"), JAVA_INT.withName("flags"), MemoryLayout.paddingLayout(64));
    /** ucp_mem_map_params_t: field_mask@0, address@8, length@16, flags@24, ... 40 bytes. */
    public static final StructLayout MEM_MAP_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"), ADDRESS.withName("address"), JAVA_LONG.withName("length"),
            MemoryLayout.paddingLayout(16));

    private static final class Holder {
        static final Ucp INSTANCE;
        static final Availability AVAILABILITY;

        static {
            // The JVM uses SIGSEGV and SIGBUS itself (safepoints, null checks, memory-mapped I/O); UCX's own
            // handlers for them would turn those into aborts. JUCX does the same before loading UCX.
            // A value the operator set in the environment is kept.
            LibC.setenv("UCX_ERROR_SIGNALS", "", false);
            Ucp ucp = null;
            Availability availability;
            try {
                ucp = new Ucp(NativeLibrary.load("libucp",
                        List.of(Path.of("/usr/lib/x86_64-linux-gnu"), Path.of("/usr/lib/aarch64-linux-gnu"),
                                Path.of("/usr/lib64"), Path.of("/usr/lib")),
                        List.of("libucp.so.0", "libucp.so")));
                availability = Availability.available("UCX " + ucp.versionString() + " at " + ucp.library.location());
            } catch (LibraryUnavailableException e) {
                availability = Availability.unavailable(e.getMessage() + "; install Debian's libucx0");
            }
            INSTANCE = ucp;
            AVAILABILITY = availability;
        }
    }

    private final NativeLibrary library;
    final MethodHandle getVersionString;
    final MethodHandle configRead;
    final MethodHandle configRelease;
    final MethodHandle initVersion;
    final MethodHandle cleanup;
    final MethodHandle workerCreate;
    final MethodHandle workerDestroy;
    final MethodHandle workerGetAddress;
    final MethodHandle workerReleaseAddress;
    final MethodHandle workerProgress;
    final MethodHandle epCreate;
    final MethodHandle epCloseNbx;
    final MethodHandle epFlushNbx;
    final MethodHandle memMap;
    final MethodHandle memUnmap;
    final MethodHandle rkeyPack;
    final MethodHandle rkeyBufferRelease;
    final MethodHandle epRkeyUnpack;
    final MethodHandle rkeyDestroy;
    final MethodHandle putNbx;
    final MethodHandle getNbx;
    final MethodHandle requestCheckStatus;
    final MethodHandle requestCancel;
    final MethodHandle requestFree;
    final MethodHandle statusString;

    private Ucp(NativeLibrary lib) {
        this.library = lib;
        getVersionString = lib.function("ucp_get_version_string", FunctionDescriptor.of(ADDRESS));
        configRead = lib.function("ucp_config_read", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        configRelease = lib.function("ucp_config_release", FunctionDescriptor.ofVoid(ADDRESS));
        initVersion = lib.function("ucp_init_version",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        cleanup = lib.function("ucp_cleanup", FunctionDescriptor.ofVoid(ADDRESS));
        workerCreate = lib.function("ucp_worker_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        workerDestroy = lib.function("ucp_worker_destroy", FunctionDescriptor.ofVoid(ADDRESS));
        workerGetAddress = lib.function("ucp_worker_get_address",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        workerReleaseAddress = lib.function("ucp_worker_release_address", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
        workerProgress = lib.function("ucp_worker_progress", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        epCreate = lib.function("ucp_ep_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        epCloseNbx = lib.function("ucp_ep_close_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        epFlushNbx = lib.function("ucp_ep_flush_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        memMap = lib.function("ucp_mem_map", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        memUnmap = lib.function("ucp_mem_unmap", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        rkeyPack = lib.function("ucp_rkey_pack", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        rkeyBufferRelease = lib.function("ucp_rkey_buffer_release", FunctionDescriptor.ofVoid(ADDRESS));
        epRkeyUnpack = lib.function("ucp_ep_rkey_unpack", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        rkeyDestroy = lib.function("ucp_rkey_destroy", FunctionDescriptor.ofVoid(ADDRESS));
        putNbx = lib.function("ucp_put_nbx",
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
        getNbx = lib.function("ucp_get_nbx",
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
        requestCheckStatus = lib.function("ucp_request_check_status", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        requestCancel = lib.function("ucp_request_cancel", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
        requestFree = lib.function("ucp_request_free", FunctionDescriptor.ofVoid(ADDRESS));
        statusString = lib.function("ucs_status_string", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    /** Whether libucp can be used here, with its version, or why not. */
    public static Availability availability() {
        return Holder.AVAILABILITY;
    }

    static Ucp get() {
        if (Holder.INSTANCE == null) {
            throw new LibraryUnavailableException(Holder.AVAILABILITY.detail());
        }
        return Holder.INSTANCE;
    }

    String versionString() {
        try {
            return ((MemorySegment) getVersionString.invokeExact()).reinterpret(64).getString(0);
        } catch (Throwable t) {
            return "unknown version";
        }
    }

    /** The name of a ucs_status_t, as UCX prints it. */
    public static String statusName(int status) {
        try {
            return ((MemorySegment) get().statusString.invokeExact(status)).reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "status " + status;
        }
    }

    /** Throws {@link UcxException} naming the call when {@code status} is not UCS_OK. */
    static void check(String call, int status) {
        if (status != OK) {
            throw new UcxException(call + " failed: " + statusName(status) + " (" + status + ")", status);
        }
    }

    /** The status encoded in a ucs_status_ptr_t: OK for NULL, the error for [-100, -1], IN_PROGRESS for a request. */
    static int statusOf(MemorySegment statusPtr) {
        long address = statusPtr.address();
        if (address == 0) {
            return OK;
        }
        if (address < 0 && address >= ERR_LAST) {
            return (int) address;
        }
        return IN_PROGRESS;
    }

    static RuntimeException rethrow(String call, Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(call + " failed to run", t);
    }
}
