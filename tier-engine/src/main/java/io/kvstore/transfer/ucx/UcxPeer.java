package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.UcpEndpoint;
import io.kvstore.ffm.ucx.UcpRemoteKey;
import io.kvstore.transfer.Peer;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.function.Consumer;

/**
 * A peer connected by a {@link UcxTransferEngine}: its endpoint, the {@link UcxPath} chosen for it
 * and the rkeys unpacked for it (cached per packed key, destroyed with the endpoint). All mutable
 * state belongs to the engine's progress thread. Closing hands the peer to the close callback its
 * engine gave it; the peer holds no reference to the engine.
 */
public final class UcxPeer implements Peer {

    private final String name;
    final long id;
    final UcpEndpoint endpoint;
    private final UcxPath path;
    /** Whether the endpoint was opened with peer-failure detection (UCP_ERR_HANDLING_MODE_PEER). */
    final boolean errorMode;

    private final String info;
    private final Object owner;
    private final Consumer<UcxPeer> onClose;
    final Map<String, UcpRemoteKey> rkeys = new HashMap<>();
    volatile boolean failed;
    volatile boolean closed;

    UcxPeer(
            String name,
            long id,
            UcpEndpoint endpoint,
            UcxPath path,
            boolean errorMode,
            String info,
            Object owner,
            Consumer<UcxPeer> onClose) {
        this.name = name;
        this.id = id;
        this.endpoint = endpoint;
        this.path = path;
        this.errorMode = errorMode;
        this.info = info;
        this.owner = owner;
        this.onClose = onClose;
    }

    /** Whether the engine identified by {@code engine} connected this peer. */
    boolean ownedBy(Object engine) {
        return owner == engine;
    }

    UcpRemoteKey rkey(byte[] packed) {
        return rkeys.computeIfAbsent(HexFormat.of().formatHex(packed), k -> endpoint.unpack(packed));
    }

    @Override
    public String name() {
        return name;
    }

    /** RMA or active messages, as chosen at connect time. */
    public UcxPath path() {
        return path;
    }

    /** UCX's description of the endpoint's lanes ({@code ucp_ep_print_info}), for logs and diagnosis. */
    public String endpointInfo() {
        return info;
    }

    /** Whether UCX reported the endpoint failed or a request to it timed out. */
    public boolean failed() {
        return failed;
    }

    @Override
    public void close() {
        onClose.accept(this);
    }

    @Override
    public String toString() {
        return "UcxPeer[" + name + ", " + path + (failed ? ", failed" : "") + "]";
    }
}
