package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The admin API over real HTTP: bearer auth, tiers, eviction policy, evict, pin/unpin, backends. */
class AdminApiTest extends ServiceTest {

    @Test
    void adminNeedsTheBearerToken() throws Exception {
        var none = http.get("/admin/tiers");
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(none.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/problem+json");
        assertThat(none.body()).contains("\"status\":401");
        assertThat(http.get("/admin/tiers", "Authorization", "Bearer wrong").statusCode())
                .isEqualTo(403);
        assertThat(http.get("/admin/tiers", ADMIN).statusCode()).isEqualTo(200);
    }

    @Test
    void tiersShowProviderCapacityAndPolicy() throws Exception {
        var r = http.get("/admin/tiers", ADMIN);
        // over direct UCX the DRAM tier lives in UCX-allocated shared memory; NIXL registers host memory
        boolean directUcx = http.get("/v1/transport").body().contains("\"dataPlane\":\"UCX\"");
        assertThat(r.body())
                .contains(
                        "\"tier\":\"DRAM\"",
                        "\"provider\":\"" + (directUcx ? "host-ucx" : "host") + "\"",
                        "\"capacityBytes\":2097152",
                        "\"tier\":\"NVME\"",
                        "\"policy\":\"LRU\"",
                        "\"highWatermark\":0.9");
    }

    @Test
    void evictionPolicyChangesAtOnceAndBadValuesChangeNothing() throws Exception {
        var set = http.json(
                "PUT",
                "/admin/eviction-policy",
                "{\"DRAM\":{\"policy\":\"w_tinylfu\",\"highWatermark\":0.85,\"lowWatermark\":0.7}}",
                ADMIN);
        assertThat(set.statusCode()).as(set.body()).isEqualTo(200);
        assertThat(http.get("/admin/eviction-policy", ADMIN).body()).contains("\"policy\":\"W_TINYLFU\"", "0.85");
        var bad = http.json(
                "PUT",
                "/admin/eviction-policy",
                "{\"DRAM\":{\"policy\":\"LFU\"},\"NVME\":{\"policy\":\"RANDOM\"}}",
                ADMIN);
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(bad.body()).contains("\"field\":\"NVME.policy\"");
        assertThat(http.get("/admin/eviction-policy", ADMIN).body()).contains("\"policy\":\"W_TINYLFU\"");
        var watermarks = http.json(
                "PUT", "/admin/eviction-policy", "{\"DRAM\":{\"highWatermark\":0.5,\"lowWatermark\":0.6}}", ADMIN);
        assertThat(watermarks.statusCode()).isEqualTo(400);
        assertThat(http.json("PUT", "/admin/eviction-policy", "{\"HBM\":{\"policy\":\"LRU\"}}", ADMIN)
                        .statusCode())
                .isEqualTo(400);
        http.json(
                "PUT",
                "/admin/eviction-policy",
                "{\"DRAM\":{\"policy\":\"LRU\",\"highWatermark\":0.9,\"lowWatermark\":0.8}}",
                ADMIN);
    }

    @Test
    void anEvictionPolicyEntryWithoutPolicyOrWatermarksIsRefusedNotIgnored() throws Exception {
        // a misspelt key ("polcy") used to answer 200 and change nothing; it is named as the field at fault
        var typo = http.json("PUT", "/admin/eviction-policy", "{\"DRAM\":{\"polcy\":\"LFU\"}}", ADMIN);
        assertThat(typo.statusCode()).as(typo.body()).isEqualTo(400);
        assertThat(typo.body()).contains("\"field\":\"DRAM.polcy\"", "highWatermark, lowWatermark, policy");
        var empty = http.json("PUT", "/admin/eviction-policy", "{\"DRAM\":{}}", ADMIN);
        assertThat(empty.statusCode()).as(empty.body()).isEqualTo(400);
        assertThat(empty.body()).contains("\"field\":\"DRAM\"", "needs policy and/or watermarks");
    }

    @Test
    void pinnedBlocksStayInDramThroughAnExplicitEviction() throws Exception {
        http.json("PUT", "/v1/namespaces/pins", TestLayout.declaration("m"));
        int[] tokens = TestLayout.tokens(4, 81);
        List<BlockHash> hashes = TestLayout.hashes(tokens);
        http.putBytes(
                "/v1/namespaces/pins/blocks",
                "application/octet-stream",
                Http.frames(hashes, TestLayout.blocks(4, 81), null));
        var pin = http.json(
                "POST",
                "/admin/pin",
                "{\"namespace\":\"pins\",\"tokenIds\":" + TestLayout.tokenJson(tokens) + "}",
                ADMIN);
        assertThat(pin.body()).contains("\"pinnedBlocks\":4");
        var evict = http.json("POST", "/admin/evict", "{\"tier\":\"DRAM\",\"namespace\":\"pins\"}", ADMIN);
        assertThat(evict.body()).contains("\"evictedBlocks\":0");
        assertThat(http.json(
                                "POST",
                                "/v1/lookup",
                                "{\"namespace\":\"pins\",\"blockHashes\":" + Http.hexList(hashes) + "}")
                        .body())
                .contains("\"tiers\":[\"DRAM\",\"DRAM\",\"DRAM\",\"DRAM\"]");
        var unpin = http.json(
                "POST", "/admin/unpin", "{\"namespace\":\"pins\",\"blockHashes\":" + Http.hexList(hashes) + "}", ADMIN);
        assertThat(unpin.body()).contains("\"unpinnedBlocks\":4");
        var evictAgain = http.json("POST", "/admin/evict", "{\"tier\":\"dram\",\"namespace\":\"pins\"}", ADMIN);
        assertThat(evictAgain.body()).contains("\"evictedBlocks\":4");
        assertThat(http.json(
                                "POST",
                                "/v1/lookup",
                                "{\"namespace\":\"pins\",\"blockHashes\":" + Http.hexList(hashes) + "}")
                        .body())
                .contains("\"tiers\":[\"NVME\",\"NVME\",\"NVME\",\"NVME\"]");
    }

    @Test
    void evictByBlocksAndBadEvictRequests() throws Exception {
        http.json("PUT", "/v1/namespaces/ev", TestLayout.declaration("m"));
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(3, 91));
        http.putBytes(
                "/v1/namespaces/ev/blocks",
                "application/octet-stream",
                Http.frames(hashes, TestLayout.blocks(3, 91), null));
        var r = http.json("POST", "/admin/evict", "{\"tier\":\"DRAM\",\"blocks\":2}", ADMIN);
        assertThat(r.body()).contains("\"evictedBlocks\":2");
        assertThat(http.json("POST", "/admin/evict", "{\"tier\":\"DRAM\"}", ADMIN)
                        .body())
                .contains("\"field\":\"bytes\"");
        assertThat(http.json("POST", "/admin/evict", "{\"tier\":\"GPU\",\"blocks\":1}", ADMIN)
                        .body())
                .contains("\"field\":\"tier\"");
        assertThat(http.json("POST", "/admin/evict", "{\"tier\":\"DRAM\",\"bytes\":-5}", ADMIN)
                        .statusCode())
                .isEqualTo(400);
        assertThat(http.json("POST", "/admin/evict", "{\"tier\":\"DRAM\",\"namespace\":\"nope\"}", ADMIN)
                        .statusCode())
                .isEqualTo(404);
        assertThat(http.json("POST", "/admin/pin", "{\"namespace\":\"ev\"}", ADMIN)
                        .statusCode())
                .isEqualTo(400);
    }

    @Test
    void backendsShowTheResolvedSetAndUcxAvailability() throws Exception {
        var r = http.get("/admin/backends", ADMIN);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("\"UCX\"", "\"source\":\"default\"", "\"available\":true");
        assertThat(r.body())
                .contains(
                        "\"deviceStorage\":{\"hbm\":\"none\"",
                        "\"route\":\"no HBM tier; DRAM demotes to NVMe through host memory\"");
    }

    /**
     * A misspelt field is refused, not dropped: {@code namspace} dropped from an evict of 1000 blocks would
     * evict them from every namespace, and {@code cache_salt} dropped from a pin would pin the blocks of an
     * unsalted request. The problem names the field and the fields there are, and nothing is evicted.
     */
    @Test
    void aFieldTheAdminApiDoesNotKnowIsRefusedAndChangesNothing() throws Exception {
        assertThat(http.json("PUT", "/v1/namespaces/typo", TestLayout.declaration("m"))
                        .statusCode())
                .isIn(200, 201);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(2, 606));
        assertThat(http.putBytes(
                                "/v1/namespaces/typo/blocks",
                                "application/octet-stream",
                                Http.frames(hashes, TestLayout.blocks(2, 606), null))
                        .statusCode())
                .isEqualTo(200);

        var evict =
                http.json("POST", "/admin/evict", "{\"tier\":\"DRAM\",\"blocks\":1000,\"namspace\":\"other\"}", ADMIN);
        assertThat(evict.statusCode()).as(evict.body()).isEqualTo(400);
        assertThat(evict.body())
                .contains("\"field\":\"namspace\"", "namespace")
                .doesNotContain("io.kvstore", "AdminController");
        assertThat(http.json(
                                "POST",
                                "/v1/lookup",
                                "{\"namespace\":\"typo\",\"blockHashes\":" + Http.hexList(hashes) + "}")
                        .body())
                .as("nothing was evicted")
                .contains("\"matchedBlocks\":2", "\"DRAM\"");

        var pin = http.json(
                "POST", "/admin/pin", "{\"namespace\":\"typo\",\"tokenIds\":[1,2],\"cache_salt\":\"s\"}", ADMIN);
        assertThat(pin.statusCode()).as(pin.body()).isEqualTo(400);
        assertThat(pin.body()).contains("\"field\":\"cache_salt\"", "cacheSalt");
        var policy = http.json("PUT", "/admin/eviction-policy", "{\"DRAM\":{\"polcy\":\"LFU\"}}", ADMIN);
        assertThat(policy.statusCode()).as(policy.body()).isEqualTo(400);
        assertThat(policy.body()).contains("\"field\":\"DRAM.polcy\"");
    }
}
