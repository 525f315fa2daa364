package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvstore.block.BlockHash;
import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.service.ServiceProcesses;
import io.kvstore.service.cluster.ClusterNodes.Node;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A cluster node with the one-sided transport: a leased lookup answers READ descriptors (lease locations)
 * only to a token with {@code one-sided: true}, as a single node does; an HTTP-only token gets the lease and
 * no addresses in the node's registered DRAM region.
 */
class ClusterLeaseLocationsTest {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String NS = "leased";
    static final String[] HTTP_ONLY = {"Authorization", "Bearer http-token-0123456789"};
    static final String[] ENGINE = {"Authorization", "Bearer engine-token-0123456789"};

    @TempDir
    static Path dir;

    static EtcdServer etcd;
    static Node a;
    static final List<BlockHash> prompt = ClusterNodes.chain(8, 77);

    @BeforeAll
    static void startNode() throws Exception {
        Assumptions.assumeTrue(Ucp.isAvailable(), () -> "libucp " + Ucp.availability());
        etcd = new EtcdServer(dir).start();
        int port = ServiceProcesses.freePort();
        List<String> args = new ArrayList<>();
        for (String arg : ClusterNodes.args(etcd.endpoint(), "a", port, dir.resolve("a"), "/ll/")) {
            args.add(arg.equals("--kvstore.transport.enabled=false") ? "--kvstore.transport.data-plane=ucx" : arg);
        }
        args.addAll(List.of(
                "--kvstore.tokens[0].tenant=alpha",
                "--kvstore.tokens[0].token=http-token-0123456789",
                "--kvstore.tokens[0].write=*",
                "--kvstore.tokens[1].tenant=alpha",
                "--kvstore.tokens[1].token=engine-token-0123456789",
                "--kvstore.tokens[1].write=*",
                "--kvstore.tokens[1].one-sided=true"));
        a = new Node(
                "a",
                port,
                new SpringApplicationBuilder(io.kvstore.service.KvStoreApplication.class)
                        .run(args.toArray(String[]::new)));
        await().atMost(Duration.ofSeconds(60))
                .ignoreExceptions()
                .until(() ->
                        ClusterNodes.send(a.base(), "PUT", "/v1/namespaces/" + NS, ClusterNodes.DECLARATION, ENGINE)
                                        .statusCode()
                                == 201);
        var stored = ClusterNodes.store(a.base(), NS, ClusterNodes.frames(prompt, 0, prompt.size()), ENGINE);
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
    }

    @AfterAll
    static void stop() throws Exception {
        if (a != null) {
            a.close();
        }
        if (etcd != null) {
            etcd.close();
        }
    }

    private static JsonNode leasedLookup(String[] token) throws Exception {
        var r = ClusterNodes.send(a.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson(NS, prompt, true), token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.path("matchedBlocks").asInt()).isEqualTo(prompt.size());
        assertThat(body.path("leases")).hasSize(1);
        return body.path("leases").get(0).path("lease");
    }

    @Test
    void leaseLocationsGoOnlyToATokenWithTheOneSidedDataPlane() throws Exception {
        assertThat(leasedLookup(ENGINE).path("locations")).hasSize(prompt.size());
        JsonNode httpOnly = leasedLookup(HTTP_ONLY);
        assertThat(httpOnly.path("id").asString()).isNotEmpty();
        assertThat(httpOnly.path("locations").isMissingNode()
                        || httpOnly.path("locations").isNull())
                .as("READ descriptors handed to a token without one-sided: " + httpOnly)
                .isTrue();
    }
}
