package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.LazyBinding;
import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.NativeLibrary;
import io.kvstore.ffm.libc.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Binding of UCX's {@code libucp} (API 1.13, Debian's libucx0): context, worker, endpoint, memory
 * registration, rkeys, RMA put/get, active messages, flush and requests. Every symbol is looked up
 * once, lazily, on first use; when the library or a symbol is missing {@link #availability()} says
 * which and where it looked, and nothing else in the JVM is affected.
 *
 * <p>This class holds only the raw downcalls and upcall-stub factories; the typed wrappers
 * ({@link UcpContext}, {@link UcpWorker}, {@link UcpEndpoint}, {@link UcpMemory},
 * {@link UcpRemoteKey}) turn statuses into {@link UcxException}s and own the native handles.
 * Library location: {@code -Dkvstore.ucx.lib.dir} or {@code KVSTORE_UCX_LIB_DIR}, then the Debian
 * and common prefixes, then the system loader.
 */
public final class Ucp {

    /** UCP_FEATURE_TAG. */
    public static final long FEATURE_TAG = 1L;
    /** UCP_FEATURE_RMA: put/get on registered memory. */
    public static final long FEATURE_RMA = 1L << 1;
    /** UCP_FEATURE_WAKEUP: event descriptor so an idle worker can sleep. */
    public static final long FEATURE_WAKEUP = 1L << 4;
    /** UCP_FEATURE_AM: active messages. */
    public static final long FEATURE_AM = 1L << 6;

    /** UCS_THREAD_MODE_SINGLE: one thread owns the worker. */
    public static final int THREAD_MODE_SINGLE = 0;
    /** UCS_THREAD_MODE_MULTI: any thread, UCX locks internally. */
    public static final int THREAD_MODE_MULTI = 2;

    /** UCP_ERR_HANDLING_MODE_NONE: no peer-failure detection; keeps shared-memory transports. */
    public static final int ERR_MODE_NONE = 0;
    /** UCP_ERR_HANDLING_MODE_PEER: requests fail and the error handler runs when the peer dies. */
    public static final int ERR_MODE_PEER = 1;

    /** UCP_OP_ATTR_FIELD_CALLBACK. */
    public static final int OP_ATTR_CALLBACK = 1 << 1;
    /** UCP_OP_ATTR_FIELD_USER_DATA. */
    public static final int OP_ATTR_USER_DATA = 1 << 2;
    /** UCP_OP_ATTR_FIELD_FLAGS. */
    public static final int OP_ATTR_FLAGS = 1 << 4;
    /** UCP_OP_ATTR_FIELD_MEMH. */
    public static final int OP_ATTR_MEMH = 1 << 8;

    /** UCP_AM_SEND_FLAG_REPLY: the receiver gets an endpoint to answer on. */
    public static final int AM_SEND_FLAG_REPLY = 1;
    /** UCP_AM_SEND_FLAG_EAGER. */
    public static final int AM_SEND_FLAG_EAGER = 1 << 1;
    /** UCP_AM_SEND_FLAG_RNDV. */
    public static final int AM_SEND_FLAG_RNDV = 1 << 2;

    /** UCP_AM_RECV_ATTR_FIELD_REPLY_EP. */
    public static final long AM_RECV_ATTR_REPLY_EP = 1L;
    /** UCP_AM_RECV_ATTR_FLAG_DATA: data is in memory now (eager). */
    public static final long AM_RECV_ATTR_FLAG_DATA = 1L << 16;
    /** UCP_AM_RECV_ATTR_FLAG_RNDV: data is a descriptor to fetch with ucp_am_recv_data_nbx. */
    public static final long AM_RECV_ATTR_FLAG_RNDV = 1L << 17;

    /** UCP_AM_FLAG_WHOLE_MSG: the handler sees each message whole. */
    public static final int AM_FLAG_WHOLE_MSG = 1;

    /** UCP_EP_CLOSE_FLAG_FORCE. */
    public static final int EP_CLOSE_FLAG_FORCE = 1;

    /** UCP_EP_PARAMS_FLAGS_CLIENT_SERVER: connect by socket address to a listener. */
    public static final int EP_PARAMS_FLAGS_CLIENT_SERVER = 1;

    /**
     * {@code void (*ucp_listener_conn_callback_t)(ucp_conn_request_h conn_request, void *arg)}: a client asked
     * to connect; answer with {@link UcpWorker#accept} (or let the request lapse).
     */
    @FunctionalInterface
    public interface ConnHandler {
        void requested(MemorySegment connRequest, MemorySegment arg);
    }

    /** {@code void (*ucp_send_nbx_callback_t)(void *request, ucs_status_t status, void *user_data)}. */
    @FunctionalInterface
    public interface SendCallback {
        void completed(MemorySegment request, int status, MemorySegment userData);
    }

    /** {@code void (*ucp_am_recv_data_nbx_callback_t)(void *request, ucs_status_t, size_t length, void *user_data)}. */
    @FunctionalInterface
    public interface RecvDataCallback {
        void completed(MemorySegment request, int status, long length, MemorySegment userData);
    }

    /**
     * {@code ucs_status_t (*ucp_am_recv_callback_t)(void *arg, const void *header, size_t header_length,
     * void *data, size_t length, const ucp_am_recv_param_t *param)}.
     */
    @FunctionalInterface
    public interface AmHandler {
        int received(
                MemorySegment arg,
                MemorySegment header,
                long headerLength,
                MemorySegment data,
                long length,
                MemorySegment param);
    }

    /** {@code void (*ucp_err_handler_cb_t)(void *arg, ucp_ep_h ep, ucs_status_t status)}. */
    @FunctionalInterface
    public interface ErrorHandler {
        void failed(MemorySegment arg, MemorySegment endpoint, int status);
    }

    static final FunctionDescriptor SEND_CB = FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, ADDRESS);
    static final FunctionDescriptor RECV_DATA_CB = FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS);
    static final FunctionDescriptor AM_CB =
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS);
    static final FunctionDescriptor ERR_CB = FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT);
    static final FunctionDescriptor CONN_CB = FunctionDescriptor.ofVoid(ADDRESS, ADDRESS);

    private Ucp() {}

    /** Whether libucp loaded and every symbol resolved, with its version, or why not. */
    public static Availability availability() {
        return BINDING.availability();
    }

    public static boolean isAvailable() {
        return BINDING.availability().available();
    }

    /**
     * The downcall handles.
     *
     * @throws LibraryUnavailableException with the reason when libucp is not available
     */
    static Handles h() {
        return BINDING.get();
    }

    /** {@code ucs_status_string}: the library's name for a status. */
    public static String statusString(int status) {
        try {
            MemorySegment s = (MemorySegment) h().statusString.invokeExact(status);
            return s.reinterpret(256).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** An upcall stub for send/flush/put/get completions, living as long as {@code arena}. */
    public static MemorySegment sendCallback(SendCallback callback, Arena arena) {
        return upcall(callback, "completed", SendCallback.class, SEND_CB, arena);
    }

    /** An upcall stub for {@code ucp_am_recv_data_nbx} completions. */
    public static MemorySegment recvDataCallback(RecvDataCallback callback, Arena arena) {
        return upcall(callback, "completed", RecvDataCallback.class, RECV_DATA_CB, arena);
    }

    /** An upcall stub for an active-message handler. */
    public static MemorySegment amHandler(AmHandler handler, Arena arena) {
        return upcall(handler, "received", AmHandler.class, AM_CB, arena);
    }

    /** An upcall stub for a listener's connection-request handler. */
    public static MemorySegment connHandler(ConnHandler handler, Arena arena) {
        return upcall(handler, "requested", ConnHandler.class, CONN_CB, arena);
    }

    /** An upcall stub for an endpoint error handler. */
    public static MemorySegment errorHandler(ErrorHandler handler, Arena arena) {
        return upcall(handler, "failed", ErrorHandler.class, ERR_CB, arena);
    }

    private static MemorySegment upcall(
            Object target, String method, Class<?> type, FunctionDescriptor descriptor, Arena arena) {
        try {
            MethodType mt = descriptor.toMethodType();
            MethodHandle mh =
                    MethodHandles.publicLookup().findVirtual(type, method, mt).bindTo(target);
            return NativeLibrary.linker().upcallStub(mh, descriptor, arena);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot bind UCX callback " + type.getSimpleName(), e);
        }
    }

    /** Request completion status ({@code ucp_request_check_status}). */
    public static int requestStatus(MemorySegment request) {
        try {
            return (int) h().requestCheckStatus.invokeExact(request);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Returns a request to UCX ({@code ucp_request_free}); its callback may still run if it has not. */
    public static void requestFree(MemorySegment request) {
        try {
            h().requestFree.invokeExact(request);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    /** Every downcall handle; constructed once, or not at all when a symbol is missing. */
    static final class Handles {
        final String version;
        final MethodHandle statusString;
        final MethodHandle configRead;
        final MethodHandle configModify;
        final MethodHandle configRelease;
        final MethodHandle initVersion;
        final MethodHandle cleanup;
        final MethodHandle workerCreate;
        final MethodHandle workerDestroy;
        final MethodHandle workerGetAddress;
        final MethodHandle workerReleaseAddress;
        final MethodHandle workerProgress;
        final MethodHandle workerGetEfd;
        final MethodHandle workerArm;
        final MethodHandle workerSignal;
        final MethodHandle setAmHandler;
        final MethodHandle epCreate;
        final MethodHandle epCloseNbx;
        final MethodHandle epPrintInfo;
        final MethodHandle epFlushNbx;
        final MethodHandle memMap;
        final MethodHandle memQuery;
        final MethodHandle memUnmap;
        final MethodHandle rkeyPack;
        final MethodHandle rkeyBufferRelease;
        final MethodHandle rkeyUnpack;
        final MethodHandle rkeyDestroy;
        final MethodHandle putNbx;
        final MethodHandle getNbx;
        final MethodHandle amSendNbx;
        final MethodHandle amRecvDataNbx;
        final MethodHandle amDataRelease;
        final MethodHandle requestCheckStatus;
        final MethodHandle requestFree;
        final MethodHandle requestCancel;
        final MethodHandle getVersion;
        final MethodHandle listenerCreate;
        final MethodHandle listenerQuery;
        final MethodHandle listenerDestroy;

        Handles(NativeLibrary lib) {
            statusString = lib.function("ucs_status_string", FunctionDescriptor.of(ADDRESS, JAVA_INT));
            configRead = lib.function("ucp_config_read", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            configModify =
                    lib.function("ucp_config_modify", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            configRelease = lib.function("ucp_config_release", FunctionDescriptor.ofVoid(ADDRESS));
            initVersion = lib.function(
                    "ucp_init_version", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            cleanup = lib.function("ucp_cleanup", FunctionDescriptor.ofVoid(ADDRESS));
            workerCreate =
                    lib.function("ucp_worker_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            workerDestroy = lib.function("ucp_worker_destroy", FunctionDescriptor.ofVoid(ADDRESS));
            workerGetAddress =
                    lib.function("ucp_worker_get_address", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            workerReleaseAddress =
                    lib.function("ucp_worker_release_address", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
            workerProgress = lib.function("ucp_worker_progress", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            workerGetEfd = lib.function("ucp_worker_get_efd", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            workerArm = lib.function("ucp_worker_arm", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            workerSignal = lib.function("ucp_worker_signal", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            setAmHandler =
                    lib.function("ucp_worker_set_am_recv_handler", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            epCreate = lib.function("ucp_ep_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            epCloseNbx = lib.function("ucp_ep_close_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
            epPrintInfo = lib.function("ucp_ep_print_info", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
            epFlushNbx = lib.function("ucp_ep_flush_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
            memMap = lib.function("ucp_mem_map", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            memQuery = lib.function("ucp_mem_query", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            memUnmap = lib.function("ucp_mem_unmap", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            rkeyPack =
                    lib.function("ucp_rkey_pack", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
            rkeyBufferRelease = lib.function("ucp_rkey_buffer_release", FunctionDescriptor.ofVoid(ADDRESS));
            rkeyUnpack = lib.function("ucp_ep_rkey_unpack", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            rkeyDestroy = lib.function("ucp_rkey_destroy", FunctionDescriptor.ofVoid(ADDRESS));
            putNbx = lib.function(
                    "ucp_put_nbx",
                    FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
            getNbx = lib.function(
                    "ucp_get_nbx",
                    FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
            amSendNbx = lib.function(
                    "ucp_am_send_nbx",
                    FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS));
            amRecvDataNbx = lib.function(
                    "ucp_am_recv_data_nbx",
                    FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
            amDataRelease = lib.function("ucp_am_data_release", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
            requestCheckStatus = lib.function("ucp_request_check_status", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            requestFree = lib.function("ucp_request_free", FunctionDescriptor.ofVoid(ADDRESS));
            requestCancel = lib.function("ucp_request_cancel", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
            getVersion = lib.function("ucp_get_version_string", FunctionDescriptor.of(ADDRESS));
            listenerCreate =
                    lib.function("ucp_listener_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            listenerQuery = lib.function("ucp_listener_query", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            listenerDestroy = lib.function("ucp_listener_destroy", FunctionDescriptor.ofVoid(ADDRESS));
            try {
                version = ((MemorySegment) getVersion.invokeExact())
                        .reinterpret(64)
                        .getString(0);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }
    }

    /**
     * UCX installs its own SIGSEGV/SIGBUS/SIGILL handlers when libucs loads (UCX_ERROR_SIGNALS), which
     * take over the signals HotSpot uses for safepoints and implicit null checks and bring the JVM
     * down. Unless the user chose a value, clear the list in the process environment before the
     * library is loaded, as JUCX advises.
     */
    private static void keepJvmSignalHandlers() {
        if (System.getenv("UCX_ERROR_SIGNALS") != null) {
            return;
        }
        try {
            LibC.setenv("UCX_ERROR_SIGNALS", "", false);
        } catch (IllegalStateException e) {
            throw new LibraryUnavailableException("libucp: setenv(UCX_ERROR_SIGNALS) failed; refusing to load UCX "
                    + "with its fault handlers, which would replace the JVM's");
        }
    }

    private static final LazyBinding<Handles> BINDING = LazyBinding.of(Ucp::load);

    private static LazyBinding.Loaded<Handles> load() {
        List<Path> dirs = new ArrayList<>(NativeLibrary.dirsFrom(
                System.getProperty("kvstore.ucx.lib.dir"), System.getenv("KVSTORE_UCX_LIB_DIR")));
        dirs.addAll(List.of(
                Path.of("/usr/lib/x86_64-linux-gnu"),
                Path.of("/usr/lib/aarch64-linux-gnu"),
                Path.of("/usr/lib64"),
                Path.of("/usr/local/ucx/lib"),
                Path.of("/opt/ucx/lib")));
        keepJvmSignalHandlers();
        NativeLibrary lib = NativeLibrary.load("libucp", dirs, List.of("libucp.so.0", "libucp.so"));
        Handles handles = new Handles(lib);
        return new LazyBinding.Loaded<>(handles, "UCX " + handles.version + " at " + lib.location());
    }
}
