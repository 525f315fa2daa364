package io.kvstore.ffm.nixl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.LazyBinding;
import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.NativeLibrary;
import io.kvstore.ffm.libc.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * NIXL's C API (libnixl_capi, the {@code nixl_capi_*} functions of NIXL's
 * {@code src/bindings/rust/wrapper.h}): agents, backends from plugins, memory registration,
 * metadata exchange, transfer requests and notifications. Loaded on first use from
 * {@code NIXL_LIB_DIR}, {@code java.library.path}, NIXL's install prefixes or the loader's paths;
 * {@link #availability()} says why not when it cannot be used. Plugins are found by NIXL itself in
 * {@code NIXL_PLUGIN_DIR}, else in {@code plugins/} beside libnixl.
 *
 * <p>Bound against the API without the descriptor lists' {@code sorted} flag and with
 * {@code nixl_capi_create_configured_agent} (NIXL 0.6.1 and later); an older library lacks that
 * symbol and is reported unavailable rather than called with the wrong arguments. The typed view is
 * {@link NixlAgent}; this class holds the downcall handles, found once through one helper and kept in a
 * {@link LazyBinding} like every other library of this module.
 */
public final class Nixl {

    /** Segment types (nixl_capi_mem_type_t / nixl_mem_t). */
    public static final int DRAM_SEG = 0;

    public static final int VRAM_SEG = 1;
    public static final int BLK_SEG = 2;
    public static final int OBJ_SEG = 3;
    public static final int FILE_SEG = 4;
    /** Transfer operations (nixl_capi_xfer_op_t). */
    public static final int XFER_READ = 0;

    public static final int XFER_WRITE = 1;
    /** Status values (nixl_capi_status_t) the caller acts on. */
    public static final int SUCCESS = 0;

    public static final int IN_PROG = 1;
    /** nixl_capi_thread_sync_t: NIXL serialises every agent call, so engines may call from any thread. */
    public static final int THREAD_SYNC_STRICT = 1;

    /** nixl_capi_agent_config_t (wrapper.h), LP64 layout: two bools, int port, enum, unsigned, two uint64, bool. */
    static final StructLayout AGENT_CONFIG = MemoryLayout.structLayout(
            JAVA_BOOLEAN.withName("enable_prog_thread"),
            JAVA_BOOLEAN.withName("enable_listen_thread"),
            MemoryLayout.paddingLayout(2),
            JAVA_INT.withName("listen_port"),
            JAVA_INT.withName("thread_sync"),
            JAVA_INT.withName("num_workers"),
            JAVA_LONG.withName("pthr_delay_us"),
            JAVA_LONG.withName("lthr_delay_us"),
            JAVA_BOOLEAN.withName("capture_telemetry"),
            MemoryLayout.paddingLayout(7));

    private static final LazyBinding<Nixl> BINDING = LazyBinding.of(Nixl::loadBinding);

    /** Loads the library and every symbol; a stub build counts as unavailable. */
    private static LazyBinding.Loaded<Nixl> loadBinding() {
        Nixl nixl = new Nixl(load());
        if (nixl.isStub()) {
            throw new LibraryUnavailableException("libnixl_capi at " + nixl.library.location()
                    + " is NIXL's stub build (nixl_capi_is_stub() is true): install NIXL built with its plugins");
        }
        return new LazyBinding.Loaded<>(
                nixl, "libnixl_capi at " + nixl.library.location() + ", plugins from " + nixl.pluginDirDescription());
    }

    private final NativeLibrary library;
    private final Optional<MethodHandle> isStub;
    final MethodHandle libcFree;
    final MethodHandle createConfiguredAgent;
    final MethodHandle destroyAgent;
    final MethodHandle getLocalMd;
    final MethodHandle loadRemoteMd;
    final MethodHandle invalidateRemoteMd;
    final MethodHandle getAvailablePlugins;
    final MethodHandle destroyStringList;
    final MethodHandle stringListSize;
    final MethodHandle stringListGet;
    final MethodHandle getPluginParams;
    final MethodHandle destroyMemList;
    final MethodHandle memListSize;
    final MethodHandle memListGet;
    final MethodHandle memTypeToString;
    final MethodHandle destroyParams;
    final MethodHandle paramsIsEmpty;
    final MethodHandle paramsCreateIterator;
    final MethodHandle paramsIteratorNext;
    final MethodHandle paramsDestroyIterator;
    final Optional<MethodHandle> paramsAdd;
    final MethodHandle createBackend;
    final MethodHandle destroyBackend;
    final MethodHandle createOptArgs;
    final MethodHandle destroyOptArgs;
    final MethodHandle optArgsAddBackend;
    final MethodHandle optArgsSetNotifMsg;
    final MethodHandle optArgsSetHasNotif;
    final MethodHandle createRegDlist;
    final MethodHandle destroyRegDlist;
    final MethodHandle regDlistAddDesc;
    final MethodHandle registerMem;
    final MethodHandle deregisterMem;
    final MethodHandle createXferDlist;
    final MethodHandle destroyXferDlist;
    final MethodHandle xferDlistAddDesc;
    final MethodHandle createXferReq;
    final MethodHandle postXferReq;
    final MethodHandle getXferStatus;
    final MethodHandle releaseXferReq;
    final MethodHandle destroyXferReq;
    final MethodHandle createNotifMap;
    final MethodHandle destroyNotifMap;
    final MethodHandle getNotifs;
    final MethodHandle notifMapSize;
    final MethodHandle notifMapGetAgentAt;
    final MethodHandle notifMapGetNotifsSize;
    final MethodHandle notifMapGetNotif;
    final MethodHandle notifMapClear;
    final MethodHandle genNotif;

    private Nixl(NativeLibrary library) {
        this.library = library;
        FunctionDescriptor s1 = FunctionDescriptor.of(JAVA_INT, ADDRESS);
        FunctionDescriptor s2 = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS);
        FunctionDescriptor s3 = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
        FunctionDescriptor s4 = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS);
        isStub = library.optionalFunction("nixl_capi_is_stub", FunctionDescriptor.of(JAVA_BOOLEAN));
        libcFree = NativeLibrary.libc().function("free", FunctionDescriptor.ofVoid(ADDRESS));
        createConfiguredAgent = library.function("nixl_capi_create_configured_agent", s3);
        destroyAgent = library.function("nixl_capi_destroy_agent", s1);
        getLocalMd = library.function("nixl_capi_get_local_md", s3);
        loadRemoteMd = library.function(
                "nixl_capi_load_remote_md", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
        invalidateRemoteMd = library.function("nixl_capi_invalidate_remote_md", s2);
        getAvailablePlugins = library.function("nixl_capi_get_available_plugins", s2);
        destroyStringList = library.function("nixl_capi_destroy_string_list", s1);
        stringListSize = library.function("nixl_capi_string_list_size", s2);
        stringListGet = library.function(
                "nixl_capi_string_list_get", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
        getPluginParams = library.function("nixl_capi_get_plugin_params", s4);
        destroyMemList = library.function("nixl_capi_destroy_mem_list", s1);
        memListSize = library.function("nixl_capi_mem_list_size", s2);
        memListGet = library.function(
                "nixl_capi_mem_list_get", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
        memTypeToString =
                library.function("nixl_capi_mem_type_to_string", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        destroyParams = library.function("nixl_capi_destroy_params", s1);
        paramsIsEmpty = library.function("nixl_capi_params_is_empty", s2);
        paramsCreateIterator = library.function("nixl_capi_params_create_iterator", s2);
        paramsIteratorNext = library.function("nixl_capi_params_iterator_next", s4);
        paramsDestroyIterator = library.function("nixl_capi_params_destroy_iterator", s1);
        paramsAdd = library.optionalFunction("nixl_capi_params_add", s3);
        createBackend = library.function("nixl_capi_create_backend", s4);
        destroyBackend = library.function("nixl_capi_destroy_backend", s1);
        createOptArgs = library.function("nixl_capi_create_opt_args", s1);
        destroyOptArgs = library.function("nixl_capi_destroy_opt_args", s1);
        optArgsAddBackend = library.function("nixl_capi_opt_args_add_backend", s2);
        optArgsSetNotifMsg = library.function(
                "nixl_capi_opt_args_set_notif_msg", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
        optArgsSetHasNotif = library.function(
                "nixl_capi_opt_args_set_has_notif", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BOOLEAN));
        createRegDlist =
                library.function("nixl_capi_create_reg_dlist", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        destroyRegDlist = library.function("nixl_capi_destroy_reg_dlist", s1);
        regDlistAddDesc = library.function(
                "nixl_capi_reg_dlist_add_desc",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG));
        registerMem = library.function("nixl_capi_register_mem", s3);
        deregisterMem = library.function("nixl_capi_deregister_mem", s3);
        createXferDlist =
                library.function("nixl_capi_create_xfer_dlist", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        destroyXferDlist = library.function("nixl_capi_destroy_xfer_dlist", s1);
        xferDlistAddDesc = library.function(
                "nixl_capi_xfer_dlist_add_desc",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        createXferReq = library.function(
                "nixl_capi_create_xfer_req",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        postXferReq = library.function("nixl_capi_post_xfer_req", s3);
        getXferStatus = library.function("nixl_capi_get_xfer_status", s2);
        releaseXferReq = library.function("nixl_capi_release_xfer_req", s2);
        destroyXferReq = library.function("nixl_capi_destroy_xfer_req", s1);
        createNotifMap = library.function("nixl_capi_create_notif_map", s1);
        destroyNotifMap = library.function("nixl_capi_destroy_notif_map", s1);
        getNotifs = library.function("nixl_capi_get_notifs", s3);
        notifMapSize = library.function("nixl_capi_notif_map_size", s2);
        notifMapGetAgentAt = library.function(
                "nixl_capi_notif_map_get_agent_at", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
        notifMapGetNotifsSize = library.function("nixl_capi_notif_map_get_notifs_size", s3);
        notifMapGetNotif = library.function(
                "nixl_capi_notif_map_get_notif",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
        notifMapClear = library.function("nixl_capi_notif_map_clear", s1);
        genNotif = library.function(
                "nixl_capi_gen_notif", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
    }

    /** Where libnixl_capi is looked for, in order, before the loader's own paths. */
    static List<Path> searchDirs() {
        List<Path> dirs = new ArrayList<>(
                NativeLibrary.dirsFrom(System.getenv("NIXL_LIB_DIR"), System.getProperty("java.library.path")));
        String arch = switch (System.getProperty("os.arch").toLowerCase(Locale.ROOT)) {
            case "amd64", "x86_64" -> "x86_64-linux-gnu";
            case "aarch64", "arm64" -> "aarch64-linux-gnu";
            default -> System.getProperty("os.arch") + "-linux-gnu";
        };
        for (String prefix : List.of("/usr/local/nixl", "/opt/nvidia/nvda_nixl")) {
            dirs.add(Path.of(prefix, "lib", arch));
            dirs.add(Path.of(prefix, "lib64"));
        }
        return dirs;
    }

    /**
     * Loads libnixl_capi. UCX's fault handlers are kept out first: NIXL's UCX plugin loads libucs when
     * an agent creates the backend, and libucs would otherwise replace the JVM's SIGSEGV/SIGBUS handlers.
     */
    private static NativeLibrary load() {
        try {
            LibC.keepJvmFaultHandlersFromUcx();
        } catch (IllegalStateException e) {
            throw new LibraryUnavailableException("libnixl_capi: setenv(UCX_ERROR_SIGNALS) failed; refusing to load "
                    + "NIXL, whose UCX plugin would replace the JVM's fault handlers");
        }
        try {
            return NativeLibrary.load("libnixl_capi", searchDirs(), List.of("libnixl_capi.so"));
        } catch (LibraryUnavailableException e) {
            String dir = System.getenv("NIXL_LIB_DIR");
            throw new LibraryUnavailableException(e.getMessage()
                    + (dir == null || dir.isBlank() ? " (NIXL_LIB_DIR unset)" : " (NIXL_LIB_DIR=" + dir + ")"));
        }
    }

    /**
     * The variable with which an environment promises a usable NIXL ({@code .ci/run} sets it to 1 when
     * it points {@code NIXL_LIB_DIR} at a NIXL build): tests that would skip for want of NIXL then fail.
     */
    public static final String REQUIRE_VARIABLE = "KVSTORE_REQUIRE_NIXL";

    /** Whether {@link #REQUIRE_VARIABLE} is set to {@code 1} or {@code true} here. */
    public static boolean requiredHere() {
        String value = System.getenv(REQUIRE_VARIABLE);
        return value != null && (value.trim().equals("1") || value.trim().equalsIgnoreCase("true"));
    }

    /** Whether NIXL can be used here, with the library and plugin directory, or why not. */
    public static Availability availability() {
        return BINDING.availability();
    }

    /**
     * The loaded library.
     *
     * @throws LibraryUnavailableException with the reason when it is not available
     */
    public static Nixl get() {
        return BINDING.get();
    }

    private boolean isStub() {
        return isStub.map(handle -> {
                    try {
                        return (boolean) handle.invokeExact();
                    } catch (Throwable t) {
                        throw new LibraryUnavailableException("nixl_capi_is_stub() failed: " + t);
                    }
                })
                .orElse(false);
    }

    /**
     * The directory NIXL loads plugins from: {@code NIXL_PLUGIN_DIR} when set, else {@code plugins/}
     * beside the library (NIXL's own rule in nixl_plugin_manager.cpp); empty when the library was
     * found through the loader and its directory is unknown.
     */
    public Optional<Path> pluginDir() {
        String env = System.getenv("NIXL_PLUGIN_DIR");
        if (env != null && !env.isBlank()) {
            return Optional.of(Path.of(env));
        }
        Path lib = Path.of(library.location());
        return lib.isAbsolute() ? Optional.of(lib.resolveSibling("plugins")) : Optional.empty();
    }

    /** {@link #pluginDir()} with where the answer came from, for messages. */
    public String pluginDirDescription() {
        String env = System.getenv("NIXL_PLUGIN_DIR");
        return pluginDir()
                .map(p -> p
                        + (env != null && !env.isBlank()
                                ? " (NIXL_PLUGIN_DIR)"
                                : " (beside libnixl; NIXL_PLUGIN_DIR unset)"))
                .orElse("plugins/ beside libnixl (NIXL_PLUGIN_DIR unset)");
    }

    /** Whether a plugin's shared object ({@code libplugin_<NAME>.so}) is in {@link #pluginDir()}. */
    public boolean pluginFilePresent(String name) {
        return pluginDir()
                .map(dir -> Files.isRegularFile(dir.resolve("libplugin_" + name + ".so")))
                .orElse(false);
    }

    /**
     * Why a plugin in {@link #pluginDir()} cannot be loaded (the dynamic loader's message, naming the
     * missing dependency such as {@code libucp.so.0}), or empty when it loads or is not there. NIXL
     * lists a plugin by its file and only says "backend error" when creating it fails.
     */
    public Optional<String> pluginLoadError(String name) {
        return pluginDir()
                .map(dir -> dir.resolve("libplugin_" + name + ".so"))
                .filter(Files::isRegularFile)
                .flatMap(NativeLibrary::loaderError);
    }

    /** Creates an agent; see {@link NixlAgent.Config}. */
    public NixlAgent createAgent(String name, NixlAgent.Config config) {
        return NixlAgent.create(this, name, config);
    }

    /** Throws a {@link NixlException} naming {@code call} unless {@code status} is success. */
    static void check(String call, int status) {
        if (status != SUCCESS) {
            throw new NixlException(call, status);
        }
    }

    /** Frees a buffer the C API allocated with malloc (metadata blobs, agent names). */
    void free(MemorySegment pointer) {
        try {
            libcFree.invokeExact(pointer);
        } catch (Throwable t) {
            throw new IllegalStateException(
                    "free(0x" + Long.toHexString(pointer.address()) + ") could not be invoked", t);
        }
    }

    static MemorySegment allocateConfig(Arena arena, NixlAgent.Config config) {
        MemorySegment cfg = arena.allocate(AGENT_CONFIG);
        cfg.set(JAVA_BOOLEAN, offset("enable_prog_thread"), config.progressThread());
        cfg.set(JAVA_BOOLEAN, offset("enable_listen_thread"), false);
        cfg.set(JAVA_INT, offset("listen_port"), 0);
        cfg.set(JAVA_INT, offset("thread_sync"), THREAD_SYNC_STRICT);
        cfg.set(JAVA_INT, offset("num_workers"), 1);
        cfg.set(JAVA_LONG, offset("pthr_delay_us"), config.progressDelayMicros());
        cfg.set(JAVA_LONG, offset("lthr_delay_us"), 100_000L);
        cfg.set(JAVA_BOOLEAN, offset("capture_telemetry"), false);
        return cfg;
    }

    private static long offset(String field) {
        return AGENT_CONFIG.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }
}
