package io.kvstore.service.cluster;

import static io.kvstore.service.cluster.ClusterNodes.ADMIN_TOKEN;
import static io.kvstore.service.cluster.ClusterNodes.BLOCK_BYTES;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvstore.block.BlockHash;
import io.kvstore.service.cluster.ClusterNodes.Node;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Three kvstore nodes (Spring contexts in this JVM, real HTTP on loopback) and a real etcd: what is stored
 * through one node is found and fetched byte-exact through the others, settings set on one show on all,
 * and a fourth node joining turns no hit into a miss.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterTest {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String NS = "llama";

    @TempDir
    static Path dir;

    static EtcdServer etcd;
    static final List<Node> nodes = new ArrayList<>();
    static final List<BlockHash> prompt = ClusterNodes.chain(300, 11);

    @BeforeAll
    static void startCluster() throws Exception {
        etcd = new EtcdServer(dir).start();
        for (String name : List.of("a", "b", "c")) {
            nodes.add(ClusterNodes.start(etcd.endpoint(), name, dir, "/ct/"));
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> members(nodes.get(0)).size() == 3);
    }

    @AfterAll
    static void stopCluster() throws Exception {
        nodes.forEach(Node::close);
        if (etcd != null) {
            etcd.close();
        }
    }

    static List<String> members(Node node) throws Exception {
        var r = ClusterNodes.send(node.base(), "GET", "/admin/cluster", null, "Authorization", "Bearer " + ADMIN_TOKEN);
        List<String> names = new ArrayList<>();
        JSON.readTree(r.body())
                .path("members")
                .forEach(m -> names.add(m.path("name").asString()));
        return names;
    }

    static JsonNode lookup(Node node, List<BlockHash> hashes, boolean lease) throws Exception {
        var r = ClusterNodes.send(node.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson(NS, hashes, lease));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    @Test
    @Order(1)
    void aNamespaceDeclaredOnOneNodeIsDeclaredOnAll() throws Exception {
        var r = ClusterNodes.send(nodes.get(0).base(), "PUT", "/v1/namespaces/" + NS, ClusterNodes.DECLARATION);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        for (Node n : nodes) {
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> ClusterNodes.send(n.base(), "GET", "/v1/namespaces/" + NS, null)
                                    .statusCode()
                            == 200);
        }
    }

    @Test
    @Order(2)
    void blocksStoredThroughOneNodeAreFoundAndFetchedByteExactThroughTheOthers() throws Exception {
        var stored = ClusterNodes.store(nodes.get(0).base(), NS, ClusterNodes.frames(prompt, 0, 200));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        assertThat(JSON.readTree(stored.body()).path("storedBlocks").asInt()).isEqualTo(200);

        for (Node n : nodes.subList(1, 3)) {
            JsonNode answer = lookup(n, prompt, false);
            assertThat(answer.path("matchedBlocks").asInt()).isEqualTo(200);
            assertThat(answer.path("matchedTokens").asLong()).isEqualTo(200L * 16);
            var owners = new HashSet<String>();
            answer.path("nodes").forEach(x -> owners.add(x.asString()));
            assertThat(owners)
                    .as("a 200-block prefix spreads over the nodes in runs")
                    .hasSize(3);
            assertThat(answer.path("tiers").get(0).asString()).isEqualTo("DRAM");
        }
        // each node holds only its runs: the blocks are spread, not copied everywhere
        int total = 0;
        for (Node n : nodes) {
            var t = ClusterNodes.send(n.base(), "GET", "/admin/tiers", null, "Authorization", "Bearer " + ADMIN_TOKEN);
            total += JSON.readTree(t.body()).path("tiers").get(0).path("blocks").asInt();
        }
        assertThat(total).isEqualTo(200);

        var fetched = ClusterNodes.fetch(nodes.get(2).base(), NS, prompt.subList(0, 200));
        assertThat(fetched.statusCode()).isEqualTo(200);
        assertFrames(fetched.body(), prompt.subList(0, 200));
    }

    @Test
    @Order(3)
    void aBatchStartingInsideAPromptContinuesItsRunsAndTheWholePromptIsFound() throws Exception {
        var stored = ClusterNodes.store(nodes.get(2).base(), NS, ClusterNodes.frames(prompt, 200, 260));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        JsonNode answer = lookup(nodes.get(1), prompt, false);
        assertThat(answer.path("matchedBlocks").asInt()).isEqualTo(260);
        // a fetch that starts inside a run gathers from wherever the blocks are
        var fetched = ClusterNodes.fetch(nodes.get(0).base(), NS, prompt.subList(195, 260));
        assertThat(fetched.statusCode()).isEqualTo(200);
        assertFrames(fetched.body(), prompt.subList(195, 260));
        // a block nobody holds: 404 problem naming it
        var missing = ClusterNodes.fetch(nodes.get(0).base(), NS, prompt.subList(255, 262));
        assertThat(missing.statusCode()).isEqualTo(404);
        assertThat(new String(missing.body())).contains(prompt.get(260).hex());
    }

    @Test
    @Order(4)
    void aLeasedLookupNamesEachOwnersLeaseAndEachIsReleasedAtItsNode() throws Exception {
        JsonNode answer = lookup(nodes.get(0), prompt.subList(0, 100), true);
        assertThat(answer.path("matchedBlocks").asInt()).isEqualTo(100);
        int leased = 0;
        for (JsonNode l : answer.path("leases")) {
            leased += l.path("lease").path("blocks").asInt();
            var released = ClusterNodes.send(
                    l.path("address").asString(),
                    "DELETE",
                    "/v1/leases/" + l.path("lease").path("id").asString(),
                    null);
            assertThat(released.statusCode()).isEqualTo(204);
        }
        assertThat(leased).isEqualTo(100);
    }

    @Test
    @Order(5)
    void anEvictionPolicySetOnOneNodeShowsOnAll() throws Exception {
        var r = ClusterNodes.send(
                nodes.get(1).base(),
                "PUT",
                "/admin/eviction-policy",
                "{\"DRAM\":{\"policy\":\"LFU\",\"highWatermark\":0.85,\"lowWatermark\":0.7}}",
                "Authorization",
                "Bearer " + ADMIN_TOKEN);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        for (Node n : nodes) {
            await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                var p = ClusterNodes.send(
                        n.base(), "GET", "/admin/eviction-policy", null, "Authorization", "Bearer " + ADMIN_TOKEN);
                JsonNode dram = JSON.readTree(p.body()).path("DRAM");
                assertThat(dram.path("policy").asString()).isEqualTo("LFU");
                assertThat(dram.path("highWatermark").asDouble()).isEqualTo(0.85);
            });
        }
        // a bad policy is refused where it is set and published nowhere
        var bad = ClusterNodes.send(
                nodes.get(1).base(),
                "PUT",
                "/admin/eviction-policy",
                "{\"DRAM\":{\"policy\":\"NOPE\"}}",
                "Authorization",
                "Bearer " + ADMIN_TOKEN);
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(bad.headers().firstValue("Content-Type"))
                .hasValueSatisfying(ct -> assertThat(ct).contains("problem+json"));
    }

    @Test
    @Order(6)
    void adminClusterListsMembersTheirTiersAndTheEpoch() throws Exception {
        var r = ClusterNodes.send(
                nodes.get(2).base(), "GET", "/admin/cluster", null, "Authorization", "Bearer " + ADMIN_TOKEN);
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode view = JSON.readTree(r.body());
        assertThat(view.path("node").asString()).isEqualTo("c");
        assertThat(view.path("epoch").asLong()).isPositive();
        assertThat(view.path("members")).hasSize(3);
        int blocks = 0;
        for (JsonNode m : view.path("members")) {
            blocks += m.path("tiers").get(0).path("blocks").asInt();
            assertThat(m.path("tiers").get(0).path("capacityBytes").asLong()).isEqualTo(64L << 20);
        }
        assertThat(blocks).isEqualTo(260);
        assertThat(view.path("evictionPolicy").path("DRAM").path("policy").asString())
                .isEqualTo("LFU");
    }

    @Test
    @Order(7)
    void aFourthNodeJoiningKeepsEveryHitAHit() throws Exception {
        nodes.add(ClusterNodes.start(etcd.endpoint(), "d", dir, "/ct/"));
        for (Node n : nodes) {
            await().atMost(Duration.ofSeconds(30)).until(() -> members(n).size() == 4);
        }
        // d owns some runs now but holds none of them; their previous owners still answer
        for (Node n : nodes) {
            assertThat(lookup(n, prompt, false).path("matchedBlocks").asInt()).isEqualTo(260);
        }
        var fetched = ClusterNodes.fetch(nodes.get(3).base(), NS, prompt.subList(0, 260));
        assertThat(fetched.statusCode()).isEqualTo(200);
        assertFrames(fetched.body(), prompt.subList(0, 260));
        // what is stored now goes to the new owners, d among them, and is found as well
        var stored = ClusterNodes.store(nodes.get(3).base(), NS, ClusterNodes.frames(prompt, 260, 300));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        JsonNode answer = lookup(nodes.get(0), prompt, false);
        assertThat(answer.path("matchedBlocks").asInt()).isEqualTo(300);
    }

    @Test
    @Order(8)
    void pinsApplyOnEveryNodeHoldingTheBlocks() throws Exception {
        String request =
                "{\"namespace\":\"" + NS + "\",\"blockHashes\":" + ClusterNodes.hexList(prompt.subList(0, 50)) + "}";
        var pinned = ClusterNodes.send(
                nodes.get(3).base(), "POST", "/admin/pin", request, "Authorization", "Bearer " + ADMIN_TOKEN);
        assertThat(pinned.statusCode()).as(pinned.body()).isEqualTo(200);
        // the 50 blocks live on several nodes, once each: every one is pinned where it is
        assertThat(JSON.readTree(pinned.body()).path("pinnedBlocks").asInt()).isEqualTo(50);
        var deleted = ClusterNodes.send(
                nodes.get(0).base(),
                "DELETE",
                "/v1/namespaces/" + NS + "/blocks/" + prompt.get(0).hex(),
                null,
                Peer.FORWARDED,
                "test");
        assertThat(deleted.statusCode()).isIn(404, 409); // pinned where it is held, absent elsewhere
        var unpinned = ClusterNodes.send(
                nodes.get(1).base(), "POST", "/admin/unpin", request, "Authorization", "Bearer " + ADMIN_TOKEN);
        assertThat(JSON.readTree(unpinned.body()).path("unpinnedBlocks").asInt())
                .isEqualTo(50);
    }

    /** The framed batch holds exactly {@code expected}, in order, each block's bytes as stored. */
    static void assertFrames(byte[] body, List<BlockHash> expected) throws Exception {
        var reader =
                new io.kvstore.service.blocks.BlockFrames.Reader(new java.io.ByteArrayInputStream(body), body.length);
        for (BlockHash h : expected) {
            var header = reader.next(32, BLOCK_BYTES);
            assertThat(header).isNotNull();
            assertThat(header.hash()).isEqualTo(h);
            byte[] bytes = new byte[BLOCK_BYTES];
            reader.readBlock(java.lang.foreign.MemorySegment.ofArray(bytes));
            assertThat(Arrays.equals(bytes, ClusterNodes.content(h))).isTrue();
        }
        assertThat(reader.next(32, BLOCK_BYTES)).isNull();
    }
}
