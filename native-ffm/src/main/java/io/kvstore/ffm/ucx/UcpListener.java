package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A {@code ucp_listener_h}: a worker accepting client-server connections on a socket address, so a peer
 * can connect knowing only host and port instead of an out-of-band worker address. Each connection
 * request reaches the handler given to {@link UcpWorker#listen}, which answers it with
 * {@link UcpWorker#accept}. Used on the worker's own thread, like the worker.
 */
public final class UcpListener extends NativeHandle {

    UcpListener(MemorySegment handle) {
        super(handle);
    }

    /** The TCP port the listener is bound to (the one the system chose when asked for port 0). */
    public int port() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(UcpStructs.LISTENER_ATTR);
            attr.set(JAVA_LONG, 0, 1L); // UCP_LISTENER_ATTR_FIELD_SOCKADDR
            UcpContext.check("ucp_listener_query", (int) Ucp.h().listenerQuery.invokeExact(live(), attr));
            return SocketAddresses.port(attr.asSlice(UcpStructs.offset(UcpStructs.LISTENER_ATTR, "sockaddr"), 128));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** {@code ucp_listener_destroy}. */
    @Override
    protected void release(MemorySegment handle) {
        try {
            Ucp.h().listenerDestroy.invokeExact(handle);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return "UCP listener 0x" + Long.toHexString(handleAddress());
    }
}
