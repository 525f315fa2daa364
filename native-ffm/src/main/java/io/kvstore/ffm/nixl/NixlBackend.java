package io.kvstore.ffm.nixl;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.MemorySegment;

/**
 * A backend an agent created from a plugin (UCX, GDS, GDS_MT, POSIX, ...). It lives as long as its
 * agent: NIXL has no call to remove a backend from an agent, so closing only refuses its further use;
 * the agent frees the C handle when it is destroyed, after the calls that may still read it ended.
 */
public final class NixlBackend extends NativeHandle {

    private final NixlAgent agent;
    private final String plugin;
    private final MemorySegment handle;

    NixlBackend(NixlAgent agent, String plugin, MemorySegment handle) {
        super(handle);
        this.agent = agent;
        this.plugin = plugin;
        this.handle = handle;
    }

    public String plugin() {
        return plugin;
    }

    /** The backend handle, for a call into the library; fails once the backend is closed. */
    MemorySegment handle() {
        return live();
    }

    /**
     * The backend handle also once the backend is closed: valid inside a use of the agent, which destroys it; for
     * undoing what was done with the backend (a deregistration).
     */
    MemorySegment handleUntilAgentDestroyed() {
        return handle;
    }

    /** Nothing to free yet: the agent destroys the C handle with itself ({@link NixlAgent#close()}). */
    @Override
    protected void release(MemorySegment handle) {}

    /** "NIXL backend UCX of agent a": also the start of the message when a closed backend is used. */
    @Override
    public String toString() {
        return "NIXL backend " + plugin + " of " + agent.name();
    }
}
