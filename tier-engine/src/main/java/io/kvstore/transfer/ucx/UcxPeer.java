package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.UcpEndpoint;
import io.kvstore.ffm.ucx.UcpRemoteKey;
import io.kvstore.transfer.Peer;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

/**
 * A peer connected by a {@link UcxTransferEngine}: its endpoint, the {@link UcxPath} chosen for it
 * and the rkeys unpacked for it (cached per packed key, destroyed with the endpoint). All mutable
 * state belongs to the engine's progress thread.
 */
public final class UcxPeer implements Peer {

    private final UcxTransferEngine engine;
    private final String name;
    final long id;
    final UcpEndpoint endpoint;
    private final UcxPath path;
    final boolean errorMode;
    final Map<String, UcpRemoteKey> rkeys = new HashMap<>();
    volatile String info = "";
    volatile boolean failed;
    volatile boolean closed;

    UcxPeer(UcxTransferEngine engine, String name, long id, UcpEndpoint endpoint, UcxPath path, boolean errorMode) {
        this.engine = engine;
        this.name = name;
        this.id = id;
        this.endpoint = endpoint;
        this.path = path;
        this.errorMode = errorMode;
    }

    UcxTransferEngine engine() {
        return engine;
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
        engine.closePeer(this);
    }

    @Override
    public String toString() {
        return "UcxPeer[" + name + ", " + path + (failed ? ", failed" : "") + "]";
    }
}
