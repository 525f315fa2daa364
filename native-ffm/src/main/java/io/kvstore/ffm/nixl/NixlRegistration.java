package io.kvstore.ffm.nixl;

import static java.lang.foreign.ValueLayout.ADDRESS;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Memory registered with an agent through a registration descriptor list. The list is kept until
 * {@link #close()}, which deregisters exactly what was registered and frees it, once
 * ({@link NativeHandle}: the list is the handle). Closing the agent first does both for a registration
 * still open ({@link NixlAgent}); its close then does nothing.
 */
public final class NixlRegistration extends NativeHandle {

    private final NixlAgent agent;
    private final int memoryType;
    private final List<NixlDescriptor> descriptors;
    private final NixlBackend backend;
    /** The registration descriptor list, also for the agent's close once this is marked closed. */
    private final MemorySegment dlist;

    private NixlRegistration(
            NixlAgent agent,
            int memoryType,
            List<NixlDescriptor> descriptors,
            NixlBackend backend,
            MemorySegment dlist) {
        super(dlist);
        this.agent = agent;
        this.memoryType = memoryType;
        this.descriptors = descriptors;
        this.backend = backend;
        this.dlist = dlist;
    }

    static NixlRegistration register(
            NixlAgent agent, int memoryType, List<NixlDescriptor> descriptors, NixlBackend backend) {
        if (descriptors.isEmpty()) {
            throw new IllegalArgumentException("nothing to register with " + agent);
        }
        Nixl nixl = agent.nixl();
        agent.enter(); // until the agent adopted the registration: a close racing this one then deregisters it
        try {
            MemorySegment dlist = newRegList(nixl, memoryType, descriptors);
            try {
                agent.callWithBackend(
                        "nixl_capi_register_mem(" + agent.name() + ", type " + memoryType + ", " + descriptors.size()
                                + " descriptor(s) from 0x"
                                + Long.toHexString(descriptors.getFirst().address()) + ")",
                        backend,
                        (h, opt) -> (int) nixl.registerMem.invokeExact(h, dlist, opt));
            } catch (RuntimeException e) {
                NixlAgent.call("nixl_capi_destroy_reg_dlist", a -> (int) nixl.destroyRegDlist.invokeExact(dlist));
                throw e;
            }
            NixlRegistration registration =
                    new NixlRegistration(agent, memoryType, List.copyOf(descriptors), backend, dlist);
            agent.adopt(registration);
            return registration;
        } finally {
            agent.exit();
        }
    }

    private static MemorySegment newRegList(Nixl nixl, int memoryType, List<NixlDescriptor> descriptors) {
        MemorySegment dlist;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            NixlAgent.call("nixl_capi_create_reg_dlist(" + memoryType + ")", a ->
                    (int) nixl.createRegDlist.invokeExact(memoryType, out));
            dlist = out.get(ADDRESS, 0);
        }
        try {
            for (NixlDescriptor d : descriptors) {
                NixlAgent.call(
                        "nixl_capi_reg_dlist_add_desc(0x" + Long.toHexString(d.address()) + ", " + d.length() + ", dev "
                                + d.deviceId() + ")",
                        a -> (int) nixl.regDlistAddDesc.invokeExact(
                                dlist, d.address(), d.length(), d.deviceId(), MemorySegment.NULL, 0L));
            }
            return dlist;
        } catch (RuntimeException e) {
            NixlAgent.call("nixl_capi_destroy_reg_dlist", a -> (int) nixl.destroyRegDlist.invokeExact(dlist));
            throw e;
        }
    }

    public int memoryType() {
        return memoryType;
    }

    public List<NixlDescriptor> descriptors() {
        return descriptors;
    }

    /**
     * {@code nixl_capi_deregister_mem} of the list, then {@code nixl_capi_destroy_reg_dlist}, inside a use of the
     * agent; once the agent is closing, it does both and this waits for it.
     */
    @Override
    protected void release(MemorySegment dlist) {
        agent.releaseChild(this, h -> deregister(h, dlist));
    }

    /** The agent's close releasing this registration, still open, on its {@code agentHandle}. */
    void releasedWithAgent(MemorySegment agentHandle) {
        markReleased();
        deregister(agentHandle, dlist);
    }

    /**
     * Deregisters with the backend it was registered with, by its C handle: closing the backend only refuses its
     * further use, and the handle lives as long as the agent.
     */
    private void deregister(MemorySegment agentHandle, MemorySegment dlist) {
        Nixl nixl = agent.nixl();
        try {
            MemorySegment args = agent.optArgsNaming(backend);
            try {
                NixlAgent.call(
                        "nixl_capi_deregister_mem(" + agent.name() + ", " + descriptors.size() + " descriptor(s))",
                        a -> (int) nixl.deregisterMem.invokeExact(agentHandle, dlist, args));
            } finally {
                agent.destroyOptArgs(args);
            }
        } finally {
            NixlAgent.call("nixl_capi_destroy_reg_dlist", a -> (int) nixl.destroyRegDlist.invokeExact(dlist));
        }
    }

    @Override
    public String toString() {
        return "NIXL registration of " + descriptors.size() + " descriptor(s) with " + agent.name();
    }
}
