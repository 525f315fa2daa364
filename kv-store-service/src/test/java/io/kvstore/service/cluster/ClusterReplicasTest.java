package io.kvstore.service.cluster;

import static io.kvstore.service.cluster.ClusterNodes.ADMIN_TOKEN;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvstore.block.BlockHash;
import io.kvstore.service.cluster.ClusterNodes.Node;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

/**
 * Three nodes and a namespace kept twice ({@link ClusterNodes#REPLICATED}), with no hand-off grace, so a
 * lookup asks each run's owner in the current member set only (as it does once the grace has passed).
 */
class ClusterReplicasTest {

    static final JsonMapper JSON = JsonMapper.builder().build();

    @TempDir
    static Path dir;

    static EtcdServer etcd;
    static final List<Node> nodes = new ArrayList<>();

    @BeforeAll
    static void startCluster() throws Exception {
        etcd = new EtcdServer(dir).start();
        for (String name : List.of("a", "b", "c")) {
            nodes.add(ClusterNodes.start(etcd.endpoint(), name, dir, "/cr/", "--kvstore.cluster.handoff-grace=0s"));
        }
        await().atMost(Duration.ofSeconds(30))
                .until(() -> ClusterTest.members(nodes.get(0)).size() == 3);
    }

    @AfterAll
    static void stopCluster() throws Exception {
        nodes.forEach(Node::close);
        if (etcd != null) {
            etcd.close();
        }
    }

    /**
     * A prompt stored as an engine stores it: a few blocks at a time, each batch after the first continuing a
     * run that began in an earlier one. Every block is kept twice (the continuation goes to each node holding
     * its parent, not to one of them), and the whole prompt is found through every node: a continuation kept
     * only on the run's replica is not found while the run's owner answers.
     */
    @Test
    void aReplicatedPromptStoredInBatchesKeepsEveryBlockTwiceAndIsFoundWhole() throws Exception {
        String ns = ClusterNodes.REPLICATED;
        var declared = ClusterNodes.send(nodes.get(0).base(), "PUT", "/v1/namespaces/" + ns, ClusterNodes.DECLARATION);
        assertThat(declared.statusCode()).as(declared.body()).isEqualTo(201);
        for (Node n : nodes) {
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> ClusterNodes.send(n.base(), "GET", "/v1/namespaces/" + ns, null)
                                    .statusCode()
                            == 200);
        }
        List<BlockHash> prompt = ClusterNodes.chain(120, 35);
        for (int from = 0; from < prompt.size(); from += 5) {
            Node through = nodes.get((from / 5) % nodes.size());
            var stored = ClusterNodes.store(
                    through.base(), ns, ClusterNodes.frames(prompt, from, Math.min(prompt.size(), from + 5)));
            assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        }
        for (Node n : nodes) {
            var r = ClusterNodes.send(n.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson(ns, prompt, false));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(JSON.readTree(r.body()).path("matchedBlocks").asInt())
                    .as("matched through " + n.name())
                    .isEqualTo(prompt.size());
        }
        assertThat(heldBlocks()).as("copies held").isEqualTo(2L * prompt.size());
    }

    static long heldBlocks() throws Exception {
        long total = 0;
        for (Node n : nodes) {
            var t = ClusterNodes.send(n.base(), "GET", "/admin/tiers", null, "Authorization", "Bearer " + ADMIN_TOKEN);
            total += JSON.readTree(t.body()).path("tiers").get(0).path("blocks").asLong();
        }
        return total;
    }
}
