package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * A connection from a local worker to a peer's worker, with peer error handling so a dead peer fails
 * requests instead of hanging them. Puts and gets are one-sided: the peer's CPU takes no part.
 */
public final class UcpEndpoint implements AutoCloseable {

    private final UcpWorker worker;
    private final Ucp ucp;
    private final MemorySegment handle;

    UcpEndpoint(UcpWorker worker, byte[] peerAddress, boolean peerErrorHandling) {
        this.worker = worker;
        this.ucp = worker.ucp();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = arena.allocateFrom(java.lang.foreign.ValueLayout.JAVA_BYTE, peerAddress);
            MemorySegment params = arena.allocate(Ucp.EP_PARAMS);
            params.set(JAVA_LONG, 0, Ucp.EP_PARAM_FIELD_REMOTE_ADDRESS | Ucp.EP_PARAM_FIELD_ERR_HANDLING_MODE);
            params.set(ADDRESS, 8, address);
            params.set(JAVA_INT, 16, peerErrorHandling ? Ucp.ERR_HANDLING_MODE_PEER : 0);
            MemorySegment out = arena.allocate(ADDRESS);
            Ucp.check("ucp_ep_create", (int) ucp.epCreate.invokeExact(worker.handle(), params, out));
            handle = out.get(ADDRESS, 0);
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_ep_create", t);
        }
    }

    /**
     * Unpacks a peer's packed remote key (as {@link UcpMemory#packedKey()} gave it) for use on this
     * endpoint; a damaged key is refused before it reaches UCX.
     */
    public RemoteKey unpack(byte[] wrappedKey) {
        byte[] packedKey = PackedKey.unwrap(wrappedKey);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocateFrom(java.lang.foreign.ValueLayout.JAVA_BYTE, packedKey);
            MemorySegment out = arena.allocate(ADDRESS);
            Ucp.check("ucp_ep_rkey_unpack(" + packedKey.length + " bytes)",
                    (int) ucp.epRkeyUnpack.invokeExact(handle, buffer, out));
            return new RemoteKey(ucp, out.get(ADDRESS, 0));
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_ep_rkey_unpack", t);
        }
    }

    /** Writes {@code local} to the peer's memory at {@code remoteAddress}; complete locally on return. */
    public void put(MemorySegment local, long remoteAddress, RemoteKey key, Duration timeout) {
        worker.await(putAsync(local, remoteAddress, key), timeout);
    }

    /** Reads the peer's memory at {@code remoteAddress} into {@code local}; complete on return. */
    public void get(MemorySegment local, long remoteAddress, RemoteKey key, Duration timeout) {
        worker.await(getAsync(local, remoteAddress, key), timeout);
    }

    /**
     * Posts a put without waiting; several may be in flight. {@code local} must stay valid until the
     * request is awaited with {@link UcpWorker#await(UcpRequest, Duration)}.
     */
    public UcpRequest putAsync(MemorySegment local, long remoteAddress, RemoteKey key) {
        return post(ucp.putNbx, "ucp_put_nbx(" + local.byteSize() + " bytes to 0x", local, remoteAddress, key);
    }

    /** Posts a get without waiting; see {@link #putAsync}. */
    public UcpRequest getAsync(MemorySegment local, long remoteAddress, RemoteKey key) {
        return post(ucp.getNbx, "ucp_get_nbx(" + local.byteSize() + " bytes from 0x", local, remoteAddress, key);
    }

    /** ucp_put_nbx and ucp_get_nbx share one signature: (ep, buffer, count, remote_addr, rkey, param). */
    private UcpRequest post(java.lang.invoke.MethodHandle call, String description, MemorySegment local,
            long remoteAddress, RemoteKey key) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment param = arena.allocate(Ucp.REQUEST_PARAM);
            MemorySegment status = (MemorySegment) call.invokeExact(handle, local, local.byteSize(), remoteAddress,
                    key.handle(), param);
            return new UcpRequest(description + Long.toHexString(remoteAddress) + ")", status);
        } catch (Throwable t) {
            throw Ucp.rethrow(description, t);
        }
    }

    /** Waits until every put so far is complete at the peer. */
    public void flush(Duration timeout) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment param = arena.allocate(Ucp.REQUEST_PARAM);
            worker.await(new UcpRequest("ucp_ep_flush_nbx", (MemorySegment) ucp.epFlushNbx.invokeExact(handle, param)), timeout);
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_ep_flush_nbx", t);
        }
    }

    /** Closes the endpoint without waiting for the peer (it may be gone). */
    @Override
    public void close() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment param = arena.allocate(Ucp.REQUEST_PARAM);
            param.set(JAVA_INT, 0, Ucp.OP_ATTR_FIELD_FLAGS);
            param.set(JAVA_INT, 4, Ucp.EP_CLOSE_FLAG_FORCE);
            MemorySegment status = (MemorySegment) ucp.epCloseNbx.invokeExact(handle, param);
            try {
                worker.await(new UcpRequest("ucp_ep_close_nbx", status), Duration.ofSeconds(5));
            } catch (UcxException closingAnyway) {
                // a forced close of an endpoint whose peer is gone may report the peer's failure
            }
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_ep_close_nbx", t);
        }
    }
}
