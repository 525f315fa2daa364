package io.kvstore.ffm.nixl;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A backend an agent created from a plugin (UCX, GDS, GDS_MT, POSIX, ...). It lives as long as its
 * agent: NIXL has no call to remove a backend from an agent, so closing only frees the C handle.
 */
public final class NixlBackend implements AutoCloseable {

    private final NixlAgent agent;
    private final String plugin;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    NixlBackend(NixlAgent agent, String plugin, MemorySegment handle) {
        this.agent = agent;
        this.plugin = plugin;
        this.handle = handle;
    }

    public String plugin() {
        return plugin;
    }

    MemorySegment handle() {
        if (closed.get()) {
            throw new IllegalStateException("NIXL backend " + plugin + " of " + agent.name() + " is closed");
        }
        return handle;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            Nixl nixl = agent.nixl();
            NixlAgent.call(
                    "nixl_capi_destroy_backend(" + plugin + ")", a -> (int) nixl.destroyBackend.invokeExact(handle));
        }
    }

    @Override
    public String toString() {
        return plugin;
    }
}
