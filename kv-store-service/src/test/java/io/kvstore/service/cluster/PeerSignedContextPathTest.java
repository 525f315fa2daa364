package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.service.security.Caller;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.json.JsonMapper;

/**
 * A node served under a servlet context path ({@code server.servlet.context-path}) and registered at an
 * address that ends with it: a peer signs the path of its call below that address, and the node checks the same
 * path below its context path, so a forwarded caller's store and fetch are taken there as on a node served at
 * the root (before, the node checked the whole request URI, context path included, and refused every signed
 * call with 403), while one signed for another path is still refused.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "server.servlet.context-path=/kv",
            "kvstore.tiers.dram.capacity=8MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.enabled=false",
            "kvstore.transport.enabled=false",
            "kvstore.cluster.secret=" + ClusterNodes.SECRET,
            // the name its peers sign their calls for (cluster mode itself is off: no etcd here)
            "kvstore.cluster.node-name=b",
            "kvstore.tokens[0].tenant=alpha",
            "kvstore.tokens[0].token=alpha-token-0123456789",
            "kvstore.tokens[0].write=a-*"
        })
class PeerSignedContextPathTest {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String NS = "a-context";
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final Caller ALPHA_CALLER = new Caller("alpha", "config-0", List.of(), List.of("a-*"), false, false);

    @LocalServerPort
    int port;

    @org.springframework.beans.factory.annotation.Autowired
    io.kvstore.service.security.PeerCredentials credentials;

    /** The node's address as it registers it: with its context path. */
    private String base() {
        return "http://127.0.0.1:" + port + "/kv";
    }

    /** This node as another node "a" calls it, with the cluster's secret. */
    private RemotePeer peer() {
        return OnThePath.peerAt("b", base());
    }

    @Test
    void aSignedStoreAndFetchFromAPeerAreTakenUnderAContextPath() throws Exception {
        var declared = ClusterNodes.send(base(), "PUT", "/v1/namespaces/" + NS, ClusterNodes.DECLARATION, ALPHA);
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        BlockHash hash = ClusterNodes.chain(1, 7101).getFirst();
        byte[] content = ClusterNodes.content(hash);
        RemotePeer peer = peer();
        try {
            assertThat(peer.store(ALPHA_CALLER, NS, ClusterNodes.frame(hash, content))
                            .storedBlocks())
                    .isEqualTo(1);
            byte[] frames = peer.fetch(ALPHA_CALLER, NS, List.of(hash));
            assertThat(Arrays.copyOfRange(frames, frames.length - content.length, frames.length))
                    .isEqualTo(content);
        } finally {
            peer.close();
        }
        assertThat(ClusterNodes.fetch(base(), NS, List.of(hash), ALPHA).statusCode())
                .as("stored on the node, for the tenant")
                .isEqualTo(200);
    }

    @Test
    void aCallSignedForAnotherPathIsRefusedUnderAContextPath() throws Exception {
        var declared = ClusterNodes.send(base(), "PUT", "/v1/namespaces/" + NS, ClusterNodes.DECLARATION, ALPHA);
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        BlockHash hash = ClusterNodes.chain(1, 7102).getFirst();
        OnThePath.Captured signed = OnThePath.capturedStore(
                "b", credentials.boot(), ALPHA_CALLER, NS, ClusterNodes.frame(hash, ClusterNodes.content(hash)));
        // the store's signature on a store into another namespace below the context path
        var moved = new OnThePath.Captured("PUT", "/v1/namespaces/" + NS + "x/blocks", signed.headers(), signed.body());
        assertThat(OnThePath.passOn(base(), moved, signed.body()).statusCode()).isEqualTo(403);
        assertThat(OnThePath.passOn(base(), signed, signed.body()).statusCode())
                .as("the same call as signed")
                .isEqualTo(200);
    }
}
