package io.kvstore.service.cluster;

import static io.kvstore.service.cluster.ClusterNodes.ADMIN_TOKEN;
import static io.kvstore.service.cluster.ClusterNodes.BLOCK_BYTES;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.blocks.BlockFrames;
import io.kvstore.service.cluster.ClusterNodes.Node;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
    static final List<BlockHash> prompt = ClusterNodes.chain(400, 11);

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
    @Order(10)
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
    @Order(20)
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
    @Order(25)
    void aClusterLookupCountsInTheLookupMetricsOfTheNodeAskedOnly() throws Exception {
        Node b = nodes.get(1);
        Node c = nodes.get(2);
        double requestsB = meter(b, "kvstore_lookup_requests_total");
        double blocksB = meter(b, "kvstore_lookup_blocks_total");
        double hitsB = meter(b, "kvstore_lookup_hit_blocks_total{tier=\"DRAM\"}");
        double requestsC = meter(c, "kvstore_lookup_requests_total");
        java.util.Map<String, Double> probesBefore = new java.util.HashMap<>();
        for (Node other : List.of(nodes.get(0), c)) {
            probesBefore.put(other.name(), probes(b, other));
        }
        JsonNode answer = lookup(b, prompt.subList(0, 300), false);
        assertThat(answer.path("matchedBlocks").asInt()).isEqualTo(200);
        // one probe per other node holding part of the prefix, timed at b (kvstore_cluster_probe_seconds{node})
        java.util.Set<String> holders = new java.util.HashSet<>();
        answer.path("nodes").forEach(n -> holders.add(n.asString()));
        assertThat(holders).contains("a", "c");
        for (Node other : List.of(nodes.get(0), c)) {
            assertThat(probes(b, other)).as(other.name()).isEqualTo(probesBefore.get(other.name()) + 1);
        }
        assertThat(meter(b, "kvstore_lookup_requests_total")).isEqualTo(requestsB + 1);
        assertThat(meter(b, "kvstore_lookup_blocks_total")).isEqualTo(blocksB + 300);
        // every matched block counts once, by the tier of the node holding it, wherever that is
        assertThat(meter(b, "kvstore_lookup_hit_blocks_total{tier=\"DRAM\"}")).isEqualTo(hitsB + 200);
        // c answered a probe for its runs: not a lookup of its own
        assertThat(meter(c, "kvstore_lookup_requests_total")).isEqualTo(requestsC);
        assertThat(prometheus(b)).contains("kvstore_lookup_seconds_count");
    }

    static String prometheus(Node node) throws Exception {
        var r = ClusterNodes.send(
                node.base(), "GET", "/actuator/prometheus", null, "Authorization", "Bearer " + ADMIN_TOKEN);
        assertThat(r.statusCode()).isEqualTo(200);
        return r.body();
    }

    /** How many probes {@code node} has sent to {@code other} (0 before the first). */
    static double probes(Node node, Node other) throws Exception {
        var m = java.util.regex.Pattern.compile(
                        "(?m)^kvstore_cluster_probe_seconds_count\\{[^}]*node=\"" + other.name() + "\"[^}]*} (\\S+)$")
                .matcher(prometheus(node));
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    static double meter(Node node, String series) throws Exception {
        var m = java.util.regex.Pattern.compile("(?m)^" + java.util.regex.Pattern.quote(series) + " (\\S+)$")
                .matcher(prometheus(node));
        assertThat(m.find()).as(series).isTrue();
        return Double.parseDouble(m.group(1));
    }

    @Test
    @Order(30)
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
    @Order(40)
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
    @Order(50)
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
    @Order(60)
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
    @Order(65)
    void aPinSetBeforeTheBlocksExistIsKept() throws Exception {
        // nothing holds prompt[260, 400) yet: no block is pinned now, but the pin stays in etcd
        var pinned = ClusterNodes.send(
                nodes.get(0).base(),
                "POST",
                "/admin/pin",
                pinRequest(260, 400),
                "Authorization",
                "Bearer " + ADMIN_TOKEN);
        assertThat(pinned.statusCode()).as(pinned.body()).isEqualTo(200);
        assertThat(JSON.readTree(pinned.body()).path("pinnedBlocks").asInt()).isZero();
    }

    static String pinRequest(int from, int to) {
        return "{\"namespace\":\"" + NS + "\",\"blockHashes\":" + ClusterNodes.hexList(prompt.subList(from, to)) + "}";
    }

    static JsonNode clusterView(Node node) throws Exception {
        var r = ClusterNodes.send(node.base(), "GET", "/admin/cluster", null, "Authorization", "Bearer " + ADMIN_TOKEN);
        return JSON.readTree(r.body());
    }

    @Test
    @Order(70)
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
        // the eviction policy set before d joined holds on d
        var policy = ClusterNodes.send(
                nodes.get(3).base(), "GET", "/admin/eviction-policy", null, "Authorization", "Bearer " + ADMIN_TOKEN);
        assertThat(JSON.readTree(policy.body()).path("DRAM").path("policy").asString())
                .isEqualTo("LFU");
        // what is stored now goes to the new owners, d among them, and is found as well
        var stored = ClusterNodes.store(nodes.get(3).base(), NS, ClusterNodes.frames(prompt, 260, 400));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        JsonNode answer = lookup(nodes.get(0), prompt, false);
        assertThat(answer.path("matchedBlocks").asInt()).isEqualTo(400);
    }

    @Test
    @Order(75)
    void thePinSetBeforeDJoinedHoldsTheBlocksEachNodeStoredSince() throws Exception {
        JsonNode answer = lookup(nodes.get(0), prompt, false);
        java.util.Map<String, Integer> held = new java.util.TreeMap<>();
        java.util.Map<String, BlockHash> oneOf = new java.util.TreeMap<>();
        for (int i = 260; i < 400; i++) {
            String node = answer.path("nodes").get(i).asString();
            held.merge(node, 1, Integer::sum);
            oneOf.putIfAbsent(node, prompt.get(i));
        }
        assertThat(held).as("d, which joined after the pin, took runs of it").containsKey("d");
        // each node pins what it holds of it (d from etcd at its start, all at the renewal after the store)
        for (Node n : nodes) {
            int expected = held.getOrDefault(n.name(), 0);
            await().atMost(Duration.ofSeconds(30))
                    .untilAsserted(
                            () -> assertThat(clusterView(n).path("pinnedBlocks").asInt())
                                    .as(n.name())
                                    .isEqualTo(expected));
        }
        Node d = nodes.get(3);
        var refused = ClusterNodes.send(
                d.base(),
                "DELETE",
                "/v1/namespaces/" + NS + "/blocks/" + oneOf.get("d").hex(),
                null,
                Peer.FORWARDED,
                "test");
        assertThat(refused.statusCode())
                .as("a block pinned on d refuses deletion")
                .isEqualTo(409);
        var unpinned = ClusterNodes.send(
                nodes.get(1).base(),
                "POST",
                "/admin/unpin",
                pinRequest(260, 400),
                "Authorization",
                "Bearer " + ADMIN_TOKEN);
        assertThat(JSON.readTree(unpinned.body()).path("unpinnedBlocks").asInt())
                .isEqualTo(140);
        // the nodes unpin at once, then etcd drops the pins (two transactions: a node may pin the blocks of the
        // second again until it sees that one)
        for (Node n : nodes) {
            await().atMost(Duration.ofSeconds(20))
                    .untilAsserted(
                            () -> assertThat(clusterView(n).path("pinnedBlocks").asInt())
                                    .isZero());
        }
    }

    @Test
    @Order(80)
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
        // a delete through any node reaches the node holding the block: refused while it is pinned there
        var held = ClusterNodes.send(
                nodes.get(2).base(),
                "DELETE",
                "/v1/namespaces/" + NS + "/blocks/" + prompt.get(0).hex(),
                null);
        assertThat(held.statusCode()).as(held.body()).isEqualTo(409);
        assertThat(held.headers().firstValue("Content-Type"))
                .hasValueSatisfying(ct -> assertThat(ct).contains("problem+json"));
        var unpinned = ClusterNodes.send(
                nodes.get(1).base(), "POST", "/admin/unpin", request, "Authorization", "Bearer " + ADMIN_TOKEN);
        assertThat(JSON.readTree(unpinned.body()).path("unpinnedBlocks").asInt())
                .isEqualTo(50);
    }

    @Test
    @Order(90)
    void aDeleteThroughAnyNodeReachesTheNodeHoldingTheBlock() throws Exception {
        BlockHash victim = prompt.get(100);
        String holder =
                lookup(nodes.get(0), prompt, false).path("nodes").get(100).asString();
        Node asked =
                nodes.stream().filter(n -> !n.name().equals(holder)).findFirst().orElseThrow();
        var deleted =
                ClusterNodes.send(asked.base(), "DELETE", "/v1/namespaces/" + NS + "/blocks/" + victim.hex(), null);
        assertThat(deleted.statusCode()).as(deleted.body()).isEqualTo(204);
        for (Node n : nodes) {
            assertThat(lookup(n, prompt, false).path("matchedBlocks").asInt()).isEqualTo(100);
        }
        var again = ClusterNodes.send(asked.base(), "DELETE", "/v1/namespaces/" + NS + "/blocks/" + victim.hex(), null);
        assertThat(again.statusCode()).isEqualTo(404);
        assertThat(again.body()).contains(victim.hex(), "not stored on any live node");
    }

    @Test
    @Order(100)
    void aOneSidedReserveIsAcceptedOnlyWhereTheBlocksArePlacedAndOtherwiseNamesTheOwner() throws Exception {
        BlockHash first = ClusterNodes.chain(1, 99).getFirst();
        String body = "{\"blocks\":[{\"hash\":\"" + first.hex() + "\"}]}";
        List<String> misdirected = new ArrayList<>();
        String owner = null;
        for (Node n : nodes) {
            var r = ClusterNodes.send(n.base(), "POST", "/v1/namespaces/" + NS + "/blocks:reserve", body);
            if (r.statusCode() == 421) {
                assertThat(r.headers().firstValue("Content-Type"))
                        .hasValueSatisfying(ct -> assertThat(ct).contains("problem+json"));
                JsonNode problem = JSON.readTree(r.body());
                assertThat(problem.path("detail").asString()).contains("reserve them at");
                String named = problem.path("owners").get(0).path("node").asString();
                assertThat(problem.path("owners")
                                .get(0)
                                .path("blockHashes")
                                .get(0)
                                .asString())
                        .isEqualTo(first.hex());
                assertThat(owner == null || owner.equals(named))
                        .as("every node names the same owner")
                        .isTrue();
                owner = named;
                misdirected.add(n.name());
            } else {
                // the owner takes it; this test's nodes run without the one-sided transport
                assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
                assertThat(r.body()).contains("one-sided transport is unavailable");
            }
        }
        assertThat(misdirected).hasSize(3).doesNotContain(owner);
        // a namespace kept twice: a one-sided write would reach one copy only, so every node refuses it
        var declared = ClusterNodes.send(
                nodes.get(0).base(), "PUT", "/v1/namespaces/" + ClusterNodes.REPLICATED, ClusterNodes.DECLARATION);
        assertThat(declared.statusCode()).isIn(200, 201);
        for (Node n : nodes) {
            await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                var r = ClusterNodes.send(
                        n.base(), "POST", "/v1/namespaces/" + ClusterNodes.REPLICATED + "/blocks:reserve", body);
                assertThat(r.statusCode()).as(r.body()).isEqualTo(421);
                assertThat(r.body()).contains("keeps 2 copies");
            });
        }
    }

    @Test
    @Order(110)
    void aNamespaceDeletedThroughOneNodeIsGoneFromAllAndStaysGone() throws Exception {
        String ns = "short-lived";
        assertThat(ClusterNodes.send(nodes.get(0).base(), "PUT", "/v1/namespaces/" + ns, ClusterNodes.DECLARATION)
                        .statusCode())
                .isEqualTo(201);
        List<BlockHash> chain = ClusterNodes.chain(30, 5);
        for (Node n : nodes) {
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> ClusterNodes.send(n.base(), "GET", "/v1/namespaces/" + ns, null)
                                    .statusCode()
                            == 200);
        }
        assertThat(ClusterNodes.store(nodes.get(0).base(), ns, ClusterNodes.frames(chain, 0, 30))
                        .statusCode())
                .isEqualTo(200);
        var deleted = ClusterNodes.send(nodes.get(1).base(), "DELETE", "/v1/namespaces/" + ns, null);
        assertThat(deleted.statusCode()).as(deleted.body()).isEqualTo(200);
        assertThat(JSON.readTree(deleted.body()).path("deletedBlocks").asInt()).isEqualTo(30);
        Thread.sleep(2500); // past two renewals (TTL 3 s): the settings read again from etcd do not bring it back
        for (Node n : nodes) {
            assertThat(ClusterNodes.send(n.base(), "GET", "/v1/namespaces/" + ns, null)
                            .statusCode())
                    .as(n.name())
                    .isEqualTo(404);
        }
    }

    @Test
    @Order(120)
    void aTokenLookupWithAllHashesAnswersEveryBlockHashStoredOrNot() throws Exception {
        // tokens 1000..1052, block size 16, sha256_cbor seed "0": docs/hashing/golden_sha256_cbor.py's vectors
        List<String> golden = List.of(
                "749fdc796f99efd836e0126282116392f5a5e4ea5c7ed009f2f58c385525a1f5",
                "2d5697df551c58c422455b94c9c0db1ddfc2a375c20b0014c82e2a1e69c1d12a",
                "9bc8fffb32c004317d2644e9bb8aea87ba79800dcae35b235e6a96ce6a96239b");
        StringBuilder tokens = new StringBuilder("[");
        for (int t = 1000; t < 1053; t++) {
            tokens.append(t == 1000 ? "" : ",").append(t);
        }
        String all = "{\"namespace\":\"" + NS + "\",\"tokenIds\":" + tokens + "],\"allHashes\":true}";
        JsonNode none = tokenLookup(nodes.get(1), all);
        assertThat(none.path("matchedBlocks").asInt()).isZero();
        assertThat(strings(none.path("blockHashes"))).isEqualTo(golden);

        List<BlockHash> chain = golden.stream().map(BlockHash::ofHex).toList();
        var stored = ClusterNodes.store(nodes.get(0).base(), NS, ClusterNodes.frames(chain, 0, 2));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        for (Node n : nodes) {
            JsonNode some = tokenLookup(n, all);
            assertThat(some.path("matchedBlocks").asInt()).isEqualTo(2);
            assertThat(some.path("nodes")).hasSize(2);
            assertThat(strings(some.path("blockHashes"))).isEqualTo(golden);
            JsonNode matchedOnly = tokenLookup(n, all.replace(",\"allHashes\":true", ""));
            assertThat(strings(matchedOnly.path("blockHashes"))).isEqualTo(golden.subList(0, 2));
        }
    }

    /**
     * A block that fails its checksum on the node holding it is a missing frame in a fetch through another
     * node, as on a single node: the answer stays 200 and complete, every other block byte-exact, instead of
     * a 400 blaming the client's request or a 502.
     */
    @Test
    @Order(130)
    void aBlockCorruptOnItsNodeIsAMissingFrameInAFetchThroughAnother() throws Exception {
        List<BlockHash> chain = ClusterNodes.chain(16, 130);
        var stored = ClusterNodes.store(nodes.get(0).base(), NS, ClusterNodes.frames(chain, 0, 16));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        BlockKey bad = new BlockKey(NS, chain.get(3));
        Node holder = nodes.stream()
                .filter(n -> engine(n).tier(TierId.DRAM).contains(bad))
                .findFirst()
                .orElseThrow();
        MemoryTier dram = (MemoryTier) engine(holder).tier(TierId.DRAM);
        MemorySegment slot = dram.slot(dram.offsetOf(bad), BLOCK_BYTES);
        slot.set(ValueLayout.JAVA_BYTE, 100, (byte) (slot.get(ValueLayout.JAVA_BYTE, 100) ^ 0x5A));
        Node asked = nodes.stream().filter(n -> n != holder).findFirst().orElseThrow();

        var fetched = ClusterNodes.fetch(asked.base(), NS, chain);
        assertThat(fetched.statusCode()).as(new String(fetched.body())).isEqualTo(200);
        var reader = new BlockFrames.Reader(new java.io.ByteArrayInputStream(fetched.body()), fetched.body().length);
        for (int i = 0; i < 16; i++) {
            var header = reader.nextAnswer(32, BLOCK_BYTES);
            assertThat(header).isNotNull();
            assertThat(header.hash()).isEqualTo(chain.get(i));
            if (i == 3) {
                assertThat(header.missing())
                        .as("block 3 failed its checksum on " + holder.name())
                        .isTrue();
                continue;
            }
            byte[] bytes = new byte[BLOCK_BYTES];
            reader.readBlock(MemorySegment.ofArray(bytes));
            assertThat(Arrays.equals(bytes, ClusterNodes.content(chain.get(i))))
                    .as("block " + i)
                    .isTrue();
        }
        assertThat(reader.nextAnswer(32, BLOCK_BYTES)).isNull();
    }

    static TierEngine engine(Node node) {
        return node.context().getBean(TierEngine.class);
    }

    static JsonNode tokenLookup(Node node, String json) throws Exception {
        var r = ClusterNodes.send(node.base(), "POST", "/v1/lookup", json);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(x -> out.add(x.asString()));
        return out;
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
