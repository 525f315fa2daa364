package io.kvstore.ffm.nixl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.NativeHandle;
import io.kvstore.ffm.UseCount;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A NIXL agent: the unit that owns backends, registered memory and connections to remote agents.
 * Every native handle it hands out (backend, registration, transfer request) belongs to it; closing the
 * agent destroys it, once ({@link NativeHandle}), and first releases what is still open of them, so
 * nothing NIXL holds outlives the agent. Thread-safe: the agent is created with NIXL's strict thread
 * synchronisation.
 *
 * <p>Every native call that takes the agent (here, in {@link NixlRegistration} and {@link NixlTransfer})
 * runs inside a use: {@link #enter()} counts it in with one compare-and-set unless the agent is closed,
 * {@link #exit()} counts it out. {@link #close()} sets the closed bit, so later calls fail with an
 * {@link IllegalStateException} ("NIXL agent closed"), waits for the uses under way to end, and only then
 * destroys the agent and the backend handles it made: a call racing close either runs on the live agent
 * or never reaches the library, instead of handing it a destroyed agent.
 *
 * <p>Closing the agent with requests or registrations still open releases them, as closing a connection
 * closes its statements, rather than refusing: destroying the agent is the only way to stop a transfer in
 * flight (see {@link NixlTransfer}), and an owner tearing down (an engine whose regions its users close
 * later, or never) must not be left with a choice between leaking and waiting forever. The order is
 * NIXL's: requests first ({@code nixl_capi_release_xfer_req} and the request's lists; a request still in
 * flight is forgotten, and the agent's destruction right after stops its bytes), then registrations
 * ({@code nixl_capi_deregister_mem}; NIXL's request handles refer to registered memory, so none may
 * outlive its registration), then backends, then the agent. Each is marked closed: a later close of it
 * does nothing, and a close racing the agent's waits for it. After the agent is destroyed nothing of a
 * request can be freed ({@code nixl_capi_destroy_xfer_req} refuses a wrapper whose request was never
 * released), so this order is the only one that leaks nothing. (UCX 1.13, as built with assertions in
 * Debian 12, aborts the process when the agent's worker is destroyed under a request still in flight,
 * released or not; an owner waits for its requests to end where it can.)
 */
public final class NixlAgent extends NativeHandle {

    /**
     * How the agent runs.
     *
     * @param progressThread whether NIXL runs its own progress thread (needed for a passive target
     *     side to answer one-sided reads and writes without the application polling)
     * @param progressDelayMicros the progress thread's sleep between polls
     */
    public record Config(boolean progressThread, long progressDelayMicros) {
        public static final Config DEFAULT = new Config(true, 0);
    }

    /** A plugin's supported segment types and default parameters. */
    public record PluginParams(List<String> memoryTypes, Map<String, String> params) {}

    private final Nixl nixl;
    private final String name;
    private final MemorySegment agent;
    private final UseCount uses = new UseCount();
    /** The C handles of the backends made, destroyed with the agent (a use may still read one until then). */
    private final ConcurrentLinkedQueue<MemorySegment> backendHandles = new ConcurrentLinkedQueue<>();
    /** Requests made through this agent and not yet released: close releases them first. */
    private final Set<NixlTransfer> requests = ConcurrentHashMap.newKeySet();
    /** Registrations made through this agent and not yet deregistered: close deregisters them next. */
    private final Set<NixlRegistration> registrations = ConcurrentHashMap.newKeySet();
    /** Request handles and registrations NIXL holds for this agent: made and not yet released (for tests). */
    private final AtomicInteger nativeObjects = new AtomicInteger();

    private NixlAgent(Nixl nixl, String name, MemorySegment agent) {
        super(agent);
        this.nixl = nixl;
        this.name = name;
        this.agent = agent;
    }

    static NixlAgent create(Nixl nixl, String name, Config config) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            MemorySegment cfg = Nixl.allocateConfig(arena, config);
            int status = (int) nixl.createConfiguredAgent.invokeExact(arena.allocateFrom(name), cfg, out);
            Nixl.check("nixl_capi_create_configured_agent(" + name + ")", status);
            return new NixlAgent(nixl, name, out.get(ADDRESS, 0));
        } catch (NixlException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("nixl_capi_create_configured_agent could not be invoked", t);
        }
    }

    public String name() {
        return name;
    }

    /**
     * Begins a use of the agent and returns its handle, valid until the matching {@link #exit()}: close
     * destroys the agent only once every use has ended.
     *
     * @throws IllegalStateException "NIXL agent closed" once {@link #close()} began
     */
    MemorySegment enter() {
        if (!uses.tryEnter()) {
            throw new IllegalStateException("NIXL agent closed: " + name);
        }
        return agent;
    }

    /** Ends a use begun by {@link #enter()}. */
    void exit() {
        uses.exit();
    }

    /** Records a request made inside a use of the agent, so that a close, which waits for the use, sees it. */
    void adopt(NixlTransfer request) {
        nativeObjects.incrementAndGet();
        requests.add(request);
    }

    /** Records a registration made inside a use of the agent, as {@link #adopt(NixlTransfer)}. */
    void adopt(NixlRegistration registration) {
        nativeObjects.incrementAndGet();
        registrations.add(registration);
    }

    /** What NIXL still holds of requests and registrations made through this agent. */
    int liveNativeObjects() {
        return nativeObjects.get();
    }

    /**
     * A request's or registration's close: {@code release} on the agent's handle inside a use of it. Once the agent
     * is closing, its close releases the child instead, and this waits for that close to return.
     */
    void releaseChild(Object child, Consumer<MemorySegment> release) {
        if (!uses.tryEnter()) {
            close(); // returns once the agent's close, which released the child, returned
            return;
        }
        try {
            if (requests.remove(child) || registrations.remove(child)) {
                release.accept(agent);
                nativeObjects.decrementAndGet();
            }
        } finally {
            uses.exit();
        }
    }

    /** A C API call on the agent's handle, returning the library's status. */
    @FunctionalInterface
    interface OnAgent {
        int invoke(MemorySegment agent) throws Throwable;
    }

    /** {@code body} inside a use of the agent: its status, the status unchecked (the caller checks it). */
    int inUse(OnAgent body) throws Throwable {
        MemorySegment handle = enter();
        try {
            return body.invoke(handle);
        } finally {
            exit();
        }
    }

    @FunctionalInterface
    interface AgentCall {
        int invoke(Arena arena, MemorySegment agent) throws Throwable;
    }

    /** {@link #call} of a C API call that takes the agent, inside a use of it. */
    void callAgent(String what, AgentCall body) {
        call(what, a -> inUse(h -> body.invoke(a, h)));
    }

    /** A C API call that takes the agent and optional arguments naming a backend. */
    @FunctionalInterface
    interface BackendCall {
        int invoke(MemorySegment agent, MemorySegment optArgs) throws Throwable;
    }

    /**
     * {@link #call} of a C API call that takes the agent and {@link #optArgs} naming {@code backend}, inside a use of
     * the agent: the backend's handle lives until the agent is destroyed, after the uses under way.
     */
    void callWithBackend(String what, NixlBackend backend, BackendCall body) {
        MemorySegment handle = enter();
        try {
            MemorySegment args = optArgs(backend, null);
            try {
                call(what, a -> body.invoke(handle, args));
            } finally {
                destroyOptArgs(args);
            }
        } finally {
            exit();
        }
    }

    Nixl nixl() {
        return nixl;
    }

    @FunctionalInterface
    interface Call {
        int invoke(Arena arena) throws Throwable;
    }

    /**
     * Runs one C API call in a confined arena and maps a non-success status to a {@link NixlException}; a
     * closed handle's {@link IllegalStateException} passes through unwrapped.
     */
    static void call(String what, Call body) {
        int status;
        try (Arena arena = Arena.ofConfined()) {
            status = body.invoke(arena);
        } catch (IllegalStateException closed) {
            throw closed; // a closed handle, named by NativeHandle: the call never reached the library
        } catch (Throwable t) {
            throw new IllegalStateException(what + " could not be invoked", t);
        }
        Nixl.check(what, status);
    }

    /** Backend plugins NIXL found (from NIXL_PLUGIN_DIR or plugins/ beside libnixl, plus built-in ones). */
    public List<String> availablePlugins() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            callAgent("nixl_capi_get_available_plugins(" + name + ")", (a, h) ->
                    (int) nixl.getAvailablePlugins.invokeExact(h, out));
            MemorySegment list = out.get(ADDRESS, 0);
            try {
                MemorySegment size = arena.allocate(JAVA_LONG);
                call("nixl_capi_string_list_size", a -> (int) nixl.stringListSize.invokeExact(list, size));
                List<String> plugins = new ArrayList<>();
                MemorySegment str = arena.allocate(ADDRESS);
                for (long i = 0; i < size.get(JAVA_LONG, 0); i++) {
                    long index = i;
                    call("nixl_capi_string_list_get(" + i + ")", a ->
                            (int) nixl.stringListGet.invokeExact(list, index, str));
                    plugins.add(str.get(ADDRESS, 0).reinterpret(4096).getString(0));
                }
                return plugins;
            } finally {
                call("nixl_capi_destroy_string_list", a -> (int) nixl.destroyStringList.invokeExact(list));
            }
        }
    }

    /** The segment types a plugin supports and its default parameters. */
    public PluginParams pluginParams(String plugin) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mems = arena.allocate(ADDRESS);
            MemorySegment params = arena.allocate(ADDRESS);
            callAgent("nixl_capi_get_plugin_params(" + plugin + ")", (a, h) ->
                    (int) nixl.getPluginParams.invokeExact(h, a.allocateFrom(plugin), mems, params));
            MemorySegment memList = mems.get(ADDRESS, 0);
            MemorySegment paramList = params.get(ADDRESS, 0);
            try {
                return new PluginParams(memoryTypes(arena, memList), readParams(arena, paramList));
            } finally {
                call("nixl_capi_destroy_mem_list", a -> (int) nixl.destroyMemList.invokeExact(memList));
                call("nixl_capi_destroy_params", a -> (int) nixl.destroyParams.invokeExact(paramList));
            }
        }
    }

    private List<String> memoryTypes(Arena arena, MemorySegment memList) {
        MemorySegment size = arena.allocate(JAVA_LONG);
        call("nixl_capi_mem_list_size", a -> (int) nixl.memListSize.invokeExact(memList, size));
        List<String> types = new ArrayList<>();
        MemorySegment type = arena.allocate(JAVA_INT);
        MemorySegment str = arena.allocate(ADDRESS);
        for (long i = 0; i < size.get(JAVA_LONG, 0); i++) {
            long index = i;
            call("nixl_capi_mem_list_get(" + i + ")", a -> (int) nixl.memListGet.invokeExact(memList, index, type));
            int t = type.get(JAVA_INT, 0);
            call("nixl_capi_mem_type_to_string(" + t + ")", a -> (int) nixl.memTypeToString.invokeExact(t, str));
            types.add(str.get(ADDRESS, 0).reinterpret(256).getString(0));
        }
        return types;
    }

    private Map<String, String> readParams(Arena arena, MemorySegment params) {
        Map<String, String> result = new LinkedHashMap<>();
        MemorySegment empty = arena.allocate(JAVA_BOOLEAN);
        call("nixl_capi_params_is_empty", a -> (int) nixl.paramsIsEmpty.invokeExact(params, empty));
        if (empty.get(JAVA_BOOLEAN, 0)) {
            return result;
        }
        MemorySegment iterOut = arena.allocate(ADDRESS);
        call("nixl_capi_params_create_iterator", a -> (int) nixl.paramsCreateIterator.invokeExact(params, iterOut));
        MemorySegment iter = iterOut.get(ADDRESS, 0);
        try {
            MemorySegment key = arena.allocate(ADDRESS);
            MemorySegment value = arena.allocate(ADDRESS);
            MemorySegment hasNext = arena.allocate(JAVA_BOOLEAN);
            do {
                call("nixl_capi_params_iterator_next", a ->
                        (int) nixl.paramsIteratorNext.invokeExact(iter, key, value, hasNext));
                result.put(
                        key.get(ADDRESS, 0).reinterpret(4096).getString(0),
                        value.get(ADDRESS, 0).reinterpret(65536).getString(0));
            } while (hasNext.get(JAVA_BOOLEAN, 0));
        } finally {
            call("nixl_capi_params_destroy_iterator", a -> (int) nixl.paramsDestroyIterator.invokeExact(iter));
        }
        return result;
    }

    /**
     * Creates a backend from a plugin with its default parameters, {@code overrides} replacing or
     * adding entries (needs {@code nixl_capi_params_add}, NIXL 0.8 and later, when not empty).
     */
    public NixlBackend createBackend(String plugin, Map<String, String> overrides) {
        MemorySegment handle = enter(); // also while the new backend's handle is recorded, for close to free
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mems = arena.allocate(ADDRESS);
            MemorySegment params = arena.allocate(ADDRESS);
            call("nixl_capi_get_plugin_params(" + plugin + ")", a ->
                    (int) nixl.getPluginParams.invokeExact(handle, a.allocateFrom(plugin), mems, params));
            MemorySegment memList = mems.get(ADDRESS, 0);
            MemorySegment paramList = params.get(ADDRESS, 0);
            try {
                if (!overrides.isEmpty()) {
                    var add = nixl.paramsAdd.orElseThrow(() -> new UnsupportedOperationException(
                            "this libnixl_capi has no nixl_capi_params_add; cannot set backend parameters "
                                    + overrides.keySet()));
                    for (var e : overrides.entrySet()) {
                        call("nixl_capi_params_add(" + e.getKey() + "=" + e.getValue() + ")", a -> (int)
                                add.invokeExact(paramList, a.allocateFrom(e.getKey()), a.allocateFrom(e.getValue())));
                    }
                }
                MemorySegment out = arena.allocate(ADDRESS);
                call("nixl_capi_create_backend(" + name + ", " + plugin + ")", a ->
                        (int) nixl.createBackend.invokeExact(handle, a.allocateFrom(plugin), paramList, out));
                MemorySegment backend = out.get(ADDRESS, 0);
                backendHandles.add(backend);
                return new NixlBackend(this, plugin, backend);
            } finally {
                call("nixl_capi_destroy_mem_list", a -> (int) nixl.destroyMemList.invokeExact(memList));
                call("nixl_capi_destroy_params", a -> (int) nixl.destroyParams.invokeExact(paramList));
            }
        } finally {
            exit();
        }
    }

    /**
     * Registers memory with the agent's backends ({@code backend} alone when given) so remote agents
     * may read and write it once they have this agent's metadata.
     *
     * @param memoryType one of {@link Nixl#DRAM_SEG}, {@link Nixl#VRAM_SEG}, ... {@link Nixl#FILE_SEG}
     */
    public NixlRegistration register(int memoryType, List<NixlDescriptor> descriptors, NixlBackend backend) {
        return NixlRegistration.register(this, memoryType, descriptors, backend);
    }

    /** This agent's metadata (connection info and registered memory), for a peer's {@link #loadRemoteMetadata}. */
    public byte[] localMetadata() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(ADDRESS);
            MemorySegment len = arena.allocate(JAVA_LONG);
            callAgent(
                    "nixl_capi_get_local_md(" + name + ")", (a, h) -> (int) nixl.getLocalMd.invokeExact(h, data, len));
            MemorySegment blob = data.get(ADDRESS, 0);
            try {
                return blob.reinterpret(len.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
            } finally {
                nixl.free(blob); // malloc'd by the wrapper
            }
        }
    }

    /** Loads a remote agent's metadata; returns that agent's name, to address transfers to it. */
    public String loadRemoteMetadata(byte[] metadata) {
        if (metadata.length == 0) {
            throw new IllegalArgumentException("remote NIXL metadata is empty");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment blob = arena.allocateFrom(JAVA_BYTE, metadata);
            MemorySegment nameOut = arena.allocate(ADDRESS);
            long length = metadata.length;
            callAgent("nixl_capi_load_remote_md(" + name + ", " + length + " bytes)", (a, h) ->
                    (int) nixl.loadRemoteMd.invokeExact(h, blob, length, nameOut));
            MemorySegment remote = nameOut.get(ADDRESS, 0);
            try {
                return remote.reinterpret(4096).getString(0);
            } finally {
                nixl.free(remote); // strdup'd by the wrapper
            }
        }
    }

    /** Forgets a remote agent's metadata and disconnects from it. */
    public void invalidateRemoteMetadata(String remoteAgent) {
        callAgent("nixl_capi_invalidate_remote_md(" + name + ", " + remoteAgent + ")", (a, h) ->
                (int) nixl.invalidateRemoteMd.invokeExact(h, a.allocateFrom(remoteAgent)));
    }

    /**
     * Creates (does not post) a transfer between local descriptors and a remote agent's; both lists
     * must have the same count and per-entry lengths.
     *
     * @param operation {@link Nixl#XFER_READ} (remote into local) or {@link Nixl#XFER_WRITE}
     * @param backend the backend to use, or null to let NIXL choose among those both sides share
     */
    public NixlTransfer createTransfer(
            int operation,
            int localType,
            List<NixlDescriptor> local,
            int remoteType,
            List<NixlDescriptor> remote,
            String remoteAgent,
            NixlBackend backend,
            byte[] notification) {
        return NixlTransfer.create(
                this, operation, localType, local, remoteType, remote, remoteAgent, backend, notification);
    }

    /** Sends a notification message to a remote agent whose metadata is loaded. */
    public void sendNotification(String remoteAgent, byte[] message) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(JAVA_BYTE, message);
            long length = message.length;
            callAgent("nixl_capi_gen_notif(" + name + " -> " + remoteAgent + ", " + length + " bytes)", (a, h) ->
                    (int) nixl.genNotif.invokeExact(h, a.allocateFrom(remoteAgent), data, length, MemorySegment.NULL));
        }
    }

    /** Notifications received since the last call, by sending agent. */
    public Map<String, List<byte[]>> takeNotifications() {
        Map<String, List<byte[]>> result = new LinkedHashMap<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mapOut = arena.allocate(ADDRESS);
            call("nixl_capi_create_notif_map", a -> (int) nixl.createNotifMap.invokeExact(mapOut));
            MemorySegment map = mapOut.get(ADDRESS, 0);
            try {
                callAgent("nixl_capi_get_notifs(" + name + ")", (a, h) ->
                        (int) nixl.getNotifs.invokeExact(h, map, MemorySegment.NULL));
                MemorySegment size = arena.allocate(JAVA_LONG);
                call("nixl_capi_notif_map_size", a -> (int) nixl.notifMapSize.invokeExact(map, size));
                MemorySegment agentName = arena.allocate(ADDRESS);
                MemorySegment count = arena.allocate(JAVA_LONG);
                MemorySegment data = arena.allocate(ADDRESS);
                MemorySegment len = arena.allocate(JAVA_LONG);
                for (long i = 0; i < size.get(JAVA_LONG, 0); i++) {
                    long index = i;
                    call("nixl_capi_notif_map_get_agent_at(" + i + ")", a ->
                            (int) nixl.notifMapGetAgentAt.invokeExact(map, index, agentName));
                    MemorySegment agentPtr = agentName.get(ADDRESS, 0);
                    String sender = agentPtr.reinterpret(4096).getString(0);
                    call("nixl_capi_notif_map_get_notifs_size(" + sender + ")", a ->
                            (int) nixl.notifMapGetNotifsSize.invokeExact(map, agentPtr, count));
                    List<byte[]> messages = new ArrayList<>();
                    for (long n = 0; n < count.get(JAVA_LONG, 0); n++) {
                        long k = n;
                        call("nixl_capi_notif_map_get_notif(" + sender + ", " + n + ")", a ->
                                (int) nixl.notifMapGetNotif.invokeExact(map, agentPtr, k, data, len));
                        messages.add(data.get(ADDRESS, 0)
                                .reinterpret(len.get(JAVA_LONG, 0))
                                .toArray(JAVA_BYTE));
                    }
                    result.put(sender, messages);
                }
            } finally {
                call("nixl_capi_destroy_notif_map", a -> (int) nixl.destroyNotifMap.invokeExact(map));
            }
        }
        return result;
    }

    /**
     * Optional arguments naming {@code backend} (when not null) and carrying {@code notification}
     * (when not null); NULL when neither is given. Destroy with {@link #destroyOptArgs}. Call it inside a
     * use of the agent when naming a backend: the backend's handle lives until the agent is destroyed.
     */
    MemorySegment optArgs(NixlBackend backend, byte[] notification) {
        return optArgs(backend == null ? null : backend.handle(), backend, notification);
    }

    /**
     * {@link #optArgs(NixlBackend, byte[])} naming {@code backend} by its C handle, which lives until the agent is
     * destroyed even once the backend is closed: for undoing, inside a use of the agent, what was done with it.
     */
    MemorySegment optArgsNaming(NixlBackend backend) {
        return backend == null ? MemorySegment.NULL : optArgs(backend.handleUntilAgentDestroyed(), backend, null);
    }

    private MemorySegment optArgs(MemorySegment backendHandle, NixlBackend backend, byte[] notification) {
        if (backendHandle == null && notification == null) {
            return MemorySegment.NULL;
        }
        MemorySegment args;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            call("nixl_capi_create_opt_args", a -> (int) nixl.createOptArgs.invokeExact(out));
            args = out.get(ADDRESS, 0);
        }
        try {
            if (backendHandle != null) {
                MemorySegment b = backendHandle;
                call("nixl_capi_opt_args_add_backend(" + backend.plugin() + ")", a ->
                        (int) nixl.optArgsAddBackend.invokeExact(args, b));
            }
            if (notification != null) {
                long length = notification.length;
                call("nixl_capi_opt_args_set_notif_msg(" + length + " bytes)", a -> (int)
                        nixl.optArgsSetNotifMsg.invokeExact(args, a.allocateFrom(JAVA_BYTE, notification), length));
                call("nixl_capi_opt_args_set_has_notif", a -> (int) nixl.optArgsSetHasNotif.invokeExact(args, true));
            }
            return args;
        } catch (RuntimeException e) {
            destroyOptArgs(args);
            throw e;
        }
    }

    void destroyOptArgs(MemorySegment args) {
        if (!args.equals(MemorySegment.NULL)) {
            call("nixl_capi_destroy_opt_args", a -> (int) nixl.destroyOptArgs.invokeExact(args));
        }
    }

    /**
     * Refuses new uses, waits for those under way to end (native calls, each short), releases the requests and
     * registrations still open (see the class), then destroys the backend handles and the agent:
     * {@code nixl_capi_destroy_backend}, {@code nixl_capi_destroy_agent}. A failure to release one does not stop
     * the rest; the first is thrown once the agent is destroyed.
     */
    @Override
    protected void release(MemorySegment handle) {
        uses.closeAndAwait(); // no use under way, none to come: this thread alone touches the sets below
        RuntimeException failure = null;
        for (NixlTransfer request : requests) {
            failure = releaseOrNote(failure, request, () -> request.releasedWithAgent(handle));
        }
        requests.clear();
        for (NixlRegistration registration : registrations) {
            failure = releaseOrNote(failure, registration, () -> registration.releasedWithAgent(handle));
        }
        registrations.clear();
        try {
            for (MemorySegment backend = backendHandles.poll(); backend != null; backend = backendHandles.poll()) {
                MemorySegment b = backend;
                call("nixl_capi_destroy_backend", a -> (int) nixl.destroyBackend.invokeExact(b));
            }
        } finally {
            call("nixl_capi_destroy_agent(" + name + ")", a -> (int) nixl.destroyAgent.invokeExact(handle));
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Runs {@code release} of {@code child}; its failure becomes the first one or is added to it. */
    private RuntimeException releaseOrNote(RuntimeException first, Object child, Runnable release) {
        try {
            release.run();
            nativeObjects.decrementAndGet();
            return first;
        } catch (RuntimeException e) {
            RuntimeException named = new IllegalStateException("closing " + this + " could not release " + child, e);
            if (first == null) {
                return named;
            }
            first.addSuppressed(named);
            return first;
        }
    }

    @Override
    public String toString() {
        return "NIXL agent " + name;
    }
}
