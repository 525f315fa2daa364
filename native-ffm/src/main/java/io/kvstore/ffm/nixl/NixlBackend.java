package io.kvstore.ffm.nixl;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.MemorySegment;

/**
 * A backend an agent created from a plugin (UCX, GDS, GDS_MT, POSIX, ...). It lives as long as its
 * agent: NIXL has no call to remove a backend from an agent, so closing only frees the C handle, once.
 */
public final class NixlBackend extends NativeHandle {

    private final NixlAgent agent;
    private final String plugin;

    NixlBackend(NixlAgent agent, String plugin, MemorySegment handle) {
        super(handle);
        this.agent = agent;
        this.plugin = plugin;
    }

    public String plugin() {
        return plugin;
    }

    /** The backend handle, for a call into the library; fails once the backend is closed. */
    MemorySegment handle() {
        return live();
    }

    /** {@code nixl_capi_destroy_backend}. */
    @Override
    protected void release(MemorySegment handle) {
        Nixl nixl = agent.nixl();
        NixlAgent.call("nixl_capi_destroy_backend(" + plugin + ")", a -> (int) nixl.destroyBackend.invokeExact(handle));
    }

    /** "NIXL backend UCX of agent a": also the start of the message when a closed backend is used. */
    @Override
    public String toString() {
        return "NIXL backend " + plugin + " of " + agent.name();
    }
}
