package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.service.security.Caller;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A call one node forwards to another is signed over its body too: a store a {@link RemotePeer} really sends
 * is captured on the way ({@link OnThePath}) and sent to a node sharing the cluster secret, once with another
 * body and once as signed. The changed one is refused (401 problem JSON) before its body is used, so a party
 * on the path cannot store other bytes under a tenant's signed caller; the unchanged one is stored. (The
 * probe, a servlet of cluster nodes only, is checked the same way in {@link ClusterTenantTest}.)
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
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
class PeerSignedBodyTest {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String NS = "a-signed";
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final Caller ALPHA_CALLER = new Caller("alpha", "config-0", List.of(), List.of("a-*"), false, false);

    @LocalServerPort
    int port;

    @org.springframework.beans.factory.annotation.Autowired
    io.kvstore.service.security.PeerCredentials credentials;

    private String base() {
        return "http://127.0.0.1:" + port;
    }

    /** 401 problem JSON saying the body does not match its signature. */
    static void assertBodyRefused(HttpResponse<byte[]> response) {
        String body = new String(response.body());
        assertThat(response.statusCode()).as(body).isEqualTo(401);
        assertThat(response.headers().firstValue("Content-Type").orElse("")).startsWith("application/problem+json");
        JsonNode problem = JSON.readTree(body);
        assertThat(problem.path("status").asInt()).isEqualTo(401);
        assertThat(problem.path("detail").asString()).contains("does not match");
    }

    @Test
    void aForwardedStoreWhoseBodyWasChangedAfterSigningIsRefusedAndStoresNothing() throws Exception {
        var declared = ClusterNodes.send(base(), "PUT", "/v1/namespaces/" + NS, ClusterNodes.DECLARATION, ALPHA);
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        BlockHash hash = ClusterNodes.chain(1, 7001).getFirst();
        byte[] genuine = ClusterNodes.content(hash);
        OnThePath.Captured signed =
                OnThePath.capturedStore("b", credentials.boot(), ALPHA_CALLER, NS, ClusterNodes.frame(hash, genuine));
        byte[] forged = genuine.clone();
        Arrays.fill(forged, 0, 64, (byte) 0x5A);

        assertBodyRefused(OnThePath.passOn(base(), signed, ClusterNodes.frame(hash, forged)));
        assertThat(ClusterNodes.fetch(base(), NS, List.of(hash), ALPHA).statusCode())
                .as("nothing stored under the changed body")
                .isEqualTo(404);

        var unchanged = OnThePath.passOn(base(), signed, signed.body());
        assertThat(unchanged.statusCode()).as(new String(unchanged.body())).isEqualTo(200);
        var fetched = ClusterNodes.fetch(base(), NS, List.of(hash), ALPHA);
        assertThat(fetched.statusCode()).isEqualTo(200);
        byte[] frames = fetched.body();
        assertThat(Arrays.copyOfRange(frames, frames.length - genuine.length, frames.length))
                .isEqualTo(genuine);
    }
}
