package io.kvstore.transfer;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Moves bytes between this process's registered memory and a peer's, one-sided: the peer's CPU
 * takes no part. Implementations: NIXL (libnixl_capi) and direct UCX (libucp). Thread-safe.
 *
 * <p>Protocol: each side {@link #register}s memory and publishes {@link #localAddress()} plus the
 * {@link RemoteRegion}s of its regions; the other side {@link #connect}s to that address and posts
 * READs or WRITEs against those regions.
 */
public interface TransferEngine extends AutoCloseable {

    /** The backend as shown in metrics and health, e.g. "UCX" or "NIXL/UCX". */
    String backend();

    /** This engine's address (UCX worker address, NIXL agent metadata) for peers to connect to. */
    byte[] localAddress();

    /** Registers memory for one-sided access by peers. */
    LocalRegion register(MemorySegment segment, MemoryKind kind);

    /** Connects to a peer from the address it published. */
    Peer connect(String name, byte[] peerAddress);

    /**
     * Posts the spans as one request; adjacent spans are coalesced. The future completes when every
     * byte has arrived (for WRITE, when the remote side holds it), or exceptionally with a
     * {@link TransferException} on failure or when the peer stops answering.
     */
    CompletableFuture<TransferResult> post(
            TransferOp op, LocalRegion local, Peer peer, RemoteRegion remote, List<TransferSpan> spans);

    @Override
    void close();
}
