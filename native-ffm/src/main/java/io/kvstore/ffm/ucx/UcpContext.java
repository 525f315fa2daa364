package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A UCP context: the UCX library instance with its transports (chosen by UCX_TLS and friends, read from
 * the environment like any UCX program). Owns the workers and memory registrations made from it.
 */
public final class UcpContext implements AutoCloseable {

    private final Ucp ucp = Ucp.get();
    private final MemorySegment handle;

    /** A context with the given features ({@link Ucp#FEATURE_RMA} | {@link Ucp#FEATURE_AM} ...). */
    public UcpContext(long features) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment config = arena.allocate(ADDRESS);
            Ucp.check("ucp_config_read", (int) ucp.configRead.invokeExact(MemorySegment.NULL, MemorySegment.NULL, config));
            MemorySegment cfg = config.get(ADDRESS, 0);
            MemorySegment params = arena.allocate(Ucp.PARAMS);
            params.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, Ucp.PARAM_FIELD_FEATURES);
            params.set(java.lang.foreign.ValueLayout.JAVA_LONG, 8, features);
            MemorySegment out = arena.allocate(ADDRESS);
            int status = (int) ucp.initVersion.invokeExact(Ucp.API_MAJOR, Ucp.API_MINOR, params, cfg, out);
            ucp.configRelease.invokeExact(cfg);
            Ucp.check("ucp_init(features 0x" + Long.toHexString(features) + ")", status);
            handle = out.get(ADDRESS, 0);
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_init", t);
        }
    }

    MemorySegment handle() {
        return handle;
    }

    Ucp ucp() {
        return ucp;
    }

    /** A new worker (communication progress engine) usable from any thread. */
    public UcpWorker newWorker() {
        return new UcpWorker(this);
    }

    /** Registers {@code segment} for remote access through this context's transports. */
    public UcpMemory map(MemorySegment segment) {
        return new UcpMemory(this, segment);
    }

    @Override
    public void close() {
        try {
            ucp.cleanup.invokeExact(handle);
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_cleanup", t);
        }
    }
}
