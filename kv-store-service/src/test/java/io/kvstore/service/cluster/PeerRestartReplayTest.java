package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.service.KvStoreApplication;
import io.kvstore.service.ServiceProcesses;
import io.kvstore.service.error.NonceRefusedException;
import io.kvstore.service.security.Caller;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A restarted node forgets the nonces its earlier run took, but not the replay protection: every signed call names
 * the run of the node it is meant for, drawn at each start, so a call captured before the restart is refused by the
 * next run (409 of the nonce-refusal type, nothing done), while a peer that called the earlier run learns the new
 * one from that refusal and its next call is taken. Node "b" runs twice in this JVM, with one name, port and data
 * directory.
 */
class PeerRestartReplayTest {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String NS = "a-restarted";
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final Caller ALPHA_CALLER = new Caller("alpha", "config-0", List.of(), List.of("a-*"), false, false);

    /** Node "b", not in a cluster (no etcd), taking calls its peers sign with the cluster's secret. */
    private static ClusterNodes.Node startB(int port, Path dataDir) {
        var context = new SpringApplicationBuilder(KvStoreApplication.class)
                .run(
                        "--server.port=" + port,
                        "--server.address=127.0.0.1",
                        "--kvstore.data-dir=" + dataDir,
                        "--kvstore.tiers.dram.capacity=8MB",
                        "--kvstore.tiers.dram.slab-size=256KB",
                        "--kvstore.tiers.nvme.enabled=false",
                        "--kvstore.transport.enabled=false",
                        "--kvstore.cluster.secret=" + ClusterNodes.SECRET,
                        "--kvstore.cluster.node-name=b",
                        "--kvstore.tokens[0].tenant=alpha",
                        "--kvstore.tokens[0].token=alpha-token-0123456789",
                        "--kvstore.tokens[0].write=a-*");
        return new ClusterNodes.Node("b", port, context);
    }

    private static void declare(ClusterNodes.Node node) throws Exception {
        var declared = ClusterNodes.send(node.base(), "PUT", "/v1/namespaces/" + NS, ClusterNodes.DECLARATION, ALPHA);
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
    }

    @Test
    void aCallCapturedBeforeTheNodeRestartedIsRefusedByItsNextRunAndAPeersFreshCallTaken() throws Exception {
        Path dataDir = Files.createTempDirectory("kvstore-peer-restart-test");
        int port = ServiceProcesses.freePort();
        List<BlockHash> blocks = ClusterNodes.chain(3, 8801);
        ClusterNodes.Node b = startB(port, dataDir);
        String firstRun = b.boot();
        OnThePath.Captured captured;
        RemotePeer a = OnThePath.peerAt("b", b.base());
        try (b) {
            declare(b);
            // node a calls b's first run (learning that run from its refusal of a's first call)
            a.store(ALPHA_CALLER, NS, ClusterNodes.frames(blocks, 0, 1));
            // a store a sends to b, captured on its way and delivered: taken once
            captured = OnThePath.capturedStore("b", firstRun, ALPHA_CALLER, NS, ClusterNodes.frames(blocks, 1, 2));
            var delivered = OnThePath.passOn(b.base(), captured, captured.body());
            assertThat(delivered.statusCode()).as(new String(delivered.body())).isEqualTo(200);
        }

        try (ClusterNodes.Node restarted = startB(port, dataDir)) {
            assertThat(restarted.boot()).isNotEqualTo(firstRun);
            declare(restarted);

            // the captured call sent to the new run, within its signature's 5 minutes: refused, nothing stored
            var replayed = OnThePath.passOn(restarted.base(), captured, captured.body());
            String detail = new String(replayed.body());
            assertThat(replayed.statusCode()).as(detail).isEqualTo(409);
            JsonNode problem = JSON.readTree(detail);
            assertThat(problem.path("type").asString()).isEqualTo(NonceRefusedException.TYPE);
            assertThat(problem.path("detail").asString()).contains("signed for run " + firstRun);
            assertThat(ClusterNodes.fetch(restarted.base(), NS, blocks.subList(1, 2), ALPHA)
                            .statusCode())
                    .as("the replayed store stored nothing")
                    .isEqualTo(404);

            // node a, which knew the earlier run, calls again: refused for the run, signed again for the new one
            a.store(ALPHA_CALLER, NS, ClusterNodes.frames(blocks, 2, 3));
            assertThat(ClusterNodes.fetch(restarted.base(), NS, blocks.subList(2, 3), ALPHA)
                            .statusCode())
                    .isEqualTo(200);
        }
    }
}
