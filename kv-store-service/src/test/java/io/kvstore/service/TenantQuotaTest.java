package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Per-tenant quotas over real HTTP, with real DRAM and NVMe tiers: a tenant at its DRAM or NVMe quota
 * gets 507 problem JSON naming the tenant, tier and limit while another tenant still stores; deleting
 * blocks, deleting the namespace and eviction (which moves the tenant's bytes down a tier, where they
 * count against its NVMe quota) free quota; concurrent stores never pass a quota together, and concurrent
 * deletes bring the count back to zero; local-path reservations count against the reserved quota.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.admin-token=admin-secret-0123456789",
            "kvstore.tiers.dram.capacity=4MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.capacity=8MB",
            "kvstore.tiers.nvme.file-size=1MB",
            "kvstore.tiers.nvme.slab-size=256KB",
            "kvstore.transport.enabled=false",
            "kvstore.local.enabled=true",
            "kvstore.tokens[0].tenant=alpha",
            "kvstore.tokens[0].token=alpha-token-0123456789",
            "kvstore.tokens[0].write=a-*",
            "kvstore.tokens[0].one-sided=true",
            "kvstore.tokens[1].tenant=beta",
            "kvstore.tokens[1].token=beta-token-0123456789",
            "kvstore.tokens[1].write=b-*",
            "kvstore.tokens[2].tenant=gamma",
            "kvstore.tokens[2].token=gamma-token-0123456789",
            "kvstore.tokens[2].write=g-*",
            "kvstore.tokens[3].tenant=delta",
            "kvstore.tokens[3].token=delta-token-0123456789",
            "kvstore.tokens[3].write=d-*",
            "kvstore.tokens[3].one-sided=true",
            "kvstore.tokens[4].tenant=epsilon",
            "kvstore.tokens[4].token=epsilon-token-0123456789",
            "kvstore.tokens[4].write=e-*",
            "kvstore.tokens[4].one-sided=true",
            "kvstore.tokens[5].tenant=zeta",
            "kvstore.tokens[5].token=zeta-token-0123456789",
            "kvstore.tokens[5].write=z-*",
            "kvstore.tokens[5].one-sided=true",
            // 16 blocks of 16 KiB in DRAM, 32 on NVMe; 8 blocks reserved at once
            "kvstore.tenants.alpha.dram=256KB",
            "kvstore.tenants.alpha.nvme=512KB",
            "kvstore.tenants.delta.reserved=128KB",
            "kvstore.tenants.gamma.dram=320KB",
            "kvstore.tenants.epsilon.dram=160KB",
            "kvstore.tenants.zeta.dram=160KB"
        })
class TenantQuotaTest {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final String[] BETA = {"Authorization", "Bearer beta-token-0123456789"};
    static final String[] GAMMA = {"Authorization", "Bearer gamma-token-0123456789"};
    static final String[] DELTA = {"Authorization", "Bearer delta-token-0123456789"};
    static final String[] EPSILON = {"Authorization", "Bearer epsilon-token-0123456789"};
    static final String[] ZETA = {"Authorization", "Bearer zeta-token-0123456789"};
    static final String[] ADMIN = {"Authorization", "Bearer admin-secret-0123456789"};
    static final long BLOCK = TestLayout.BLOCK_BYTES;

    @LocalServerPort
    int port;

    private Http http() {
        return new Http(port);
    }

    private void declare(String ns, String[] token) throws Exception {
        var r = http().json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("m"), token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    }

    /** Stores {@code count} single-block prompts from {@code seed} on, one request each; the last answer. */
    private HttpResponse<String> store(String ns, String[] token, int seed, int count) throws Exception {
        HttpResponse<String> last = null;
        for (int i = 0; i < count; i++) {
            last = storeOne(ns, token, seed + i);
            if (last.statusCode() != 200) {
                return last;
            }
        }
        return last;
    }

    private HttpResponse<String> storeOne(String ns, String[] token, int seed) throws Exception {
        List<BlockHash> hash = TestLayout.hashes(TestLayout.tokens(1, seed));
        byte[] body = Http.frames(hash, TestLayout.blocks(1, seed), null);
        return http().putBytes("/v1/namespaces/" + ns + "/blocks", "application/octet-stream", body, token);
    }

    private static String hashOf(int seed) {
        return TestLayout.hashes(TestLayout.tokens(1, seed)).getFirst().hex();
    }

    /** {@code GET /admin/tenants}: the tenant's bytes in {@code tier}. */
    private long bytes(String tenant, String tier) throws Exception {
        var r = http().get("/admin/tenants", ADMIN);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        for (JsonNode t : JSON.readTree(r.body()).path("tenants")) {
            if (t.path("tenant").asString().equals(tenant)) {
                return t.path("tiers").path(tier).path("bytes").asLong();
            }
        }
        return 0;
    }

    private static void assertQuotaRefusal(HttpResponse<String> r, String detail) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(507);
        assertThat(r.headers().firstValue("Content-Type"))
                .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
        assertThat(r.body()).contains(detail);
    }

    @Test
    void aTenantAtItsQuotaIsRefusedWhileAnotherStoresAndEvictionAndDeletionFreeIt() throws Exception {
        declare("a-1", ALPHA);
        declare("b-1", BETA);
        assertThat(store("a-1", ALPHA, 1000, 16).statusCode()).isEqualTo(200);
        assertThat(bytes("alpha", "DRAM")).isEqualTo(16 * BLOCK);

        var refused = storeOne("a-1", ALPHA, 1016);
        assertQuotaRefusal(refused, "tenant alpha: DRAM quota 256 KiB reached");
        assertThat(refused.body()).contains("kvstore.tenants.alpha.dram");
        // a reservation lands in DRAM too: refused alike
        var reserve = http().json(
                        "POST",
                        "/v1/local/namespaces/a-1/blocks:reserve",
                        "{\"blocks\":[{\"hash\":\"" + hashOf(1016) + "\"}]}",
                        ALPHA);
        assertQuotaRefusal(reserve, "tenant alpha: DRAM quota 256 KiB reached");
        // storing a block alpha already holds adds nothing and is not refused
        assertThat(storeOne("a-1", ALPHA, 1000).statusCode()).isEqualTo(200);

        var metrics = http().get("/actuator/prometheus").body();
        assertThat(metrics)
                .contains("kvstore_tenant_bytes{tenant=\"alpha\",tier=\"DRAM\"} " + (double) (16 * BLOCK))
                .contains("kvstore_tenant_quota_bytes{tenant=\"alpha\",tier=\"DRAM\"} " + (double) (16 * BLOCK))
                .containsPattern("kvstore_tenant_quota_refusals_total\\{tenant=\"alpha\",tier=\"DRAM\"} [1-9]");
        // beta, without a quota, stores more than alpha's quota meanwhile
        assertThat(store("b-1", BETA, 2000, 40).statusCode()).isEqualTo(200);
        assertThat(bytes("beta", "DRAM")).isEqualTo(40 * BLOCK);

        // deleting blocks frees quota, for exactly as many blocks
        for (int i = 0; i < 4; i++) {
            assertThat(http().send("DELETE", "/v1/namespaces/a-1/blocks/" + hashOf(1000 + i), null, null, ALPHA)
                            .statusCode())
                    .isEqualTo(204);
        }
        assertThat(bytes("alpha", "DRAM")).isEqualTo(12 * BLOCK);
        assertThat(store("a-1", ALPHA, 1016, 4).statusCode()).isEqualTo(200);
        assertQuotaRefusal(storeOne("a-1", ALPHA, 1020), "tenant alpha: DRAM quota");

        // eviction moves alpha's blocks to NVMe: its DRAM quota is free, its NVMe bytes follow the blocks
        var evicted = http().json("POST", "/admin/evict", "{\"tier\":\"DRAM\",\"namespace\":\"a-1\"}", ADMIN);
        assertThat(evicted.statusCode()).as(evicted.body()).isEqualTo(200);
        assertThat(bytes("alpha", "DRAM")).isZero();
        assertThat(bytes("alpha", "NVME")).isEqualTo(16 * BLOCK);
        assertThat(store("a-1", ALPHA, 1020, 16).statusCode()).isEqualTo(200);
        http().json("POST", "/admin/evict", "{\"tier\":\"DRAM\",\"namespace\":\"a-1\"}", ADMIN);
        assertThat(bytes("alpha", "NVME")).isEqualTo(32 * BLOCK);
        // now at its NVMe quota: new stores are refused, naming that limit
        var nvmeFull = storeOne("a-1", ALPHA, 1036);
        assertQuotaRefusal(nvmeFull, "tenant alpha: NVME quota 512 KiB reached");
        assertThat(nvmeFull.body()).contains("kvstore.tenants.alpha.nvme");
        assertThat(storeOne("b-1", BETA, 2040).statusCode()).isEqualTo(200);

        // deleting the namespace frees everything
        assertThat(http().send("DELETE", "/v1/namespaces/a-1", null, null, ALPHA)
                        .statusCode())
                .isEqualTo(200);
        assertThat(bytes("alpha", "DRAM")).isZero();
        assertThat(bytes("alpha", "NVME")).isZero();
        declare("a-1", ALPHA);
        assertThat(store("a-1", ALPHA, 1100, 16).statusCode()).isEqualTo(200);
    }

    @Test
    void concurrentStoresNeverPassAQuotaAndConcurrentDeletesFreeIt() throws Exception {
        declare("g-1", GAMMA);
        int quotaBlocks = 20; // 320 KiB; DRAM stays far below its watermark, so nothing moves down meanwhile
        List<Future<Integer>> answers = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            for (int i = 0; i < 60; i++) {
                int seed = 5000 + i;
                answers.add(pool.submit(() -> storeOne("g-1", GAMMA, seed).statusCode()));
            }
        }
        int stored = 0;
        for (Future<Integer> f : answers) {
            assertThat(f.get()).isIn(200, 507);
            stored += f.get() == 200 ? 1 : 0;
        }
        assertThat(stored).isEqualTo(quotaBlocks);
        assertThat(bytes("gamma", "DRAM")).isEqualTo(quotaBlocks * BLOCK);

        List<Future<Integer>> deletes = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            for (int i = 0; i < 60; i++) {
                String hash = hashOf(5000 + i);
                deletes.add(
                        pool.submit(() -> http().send("DELETE", "/v1/namespaces/g-1/blocks/" + hash, null, null, GAMMA)
                                .statusCode()));
                // stores of other blocks race the deletes: each either fits or is refused, never more
                int seed = 6000 + i;
                deletes.add(pool.submit(() -> storeOne("g-1", GAMMA, seed).statusCode()));
            }
        }
        for (Future<Integer> f : deletes) {
            assertThat(f.get()).isIn(200, 204, 404, 507);
        }
        assertThat(bytes("gamma", "DRAM")).isLessThanOrEqualTo(quotaBlocks * BLOCK);
        assertThat(http().send("DELETE", "/v1/namespaces/g-1", null, null, GAMMA)
                        .statusCode())
                .isEqualTo(200);
        assertThat(bytes("gamma", "DRAM")).isZero();
    }

    @Test
    void localPathReservationsCountAgainstTheReservedQuota() throws Exception {
        declare("d-local", DELTA);
        StringBuilder blocks = new StringBuilder("[");
        for (int i = 0; i < 9; i++) {
            blocks.append(i == 0 ? "" : ",")
                    .append("{\"hash\":\"")
                    .append(hashOf(7000 + i))
                    .append("\"}");
        }
        String nine = "{\"blocks\":" + blocks.append(']') + "}";
        var refused = http().json("POST", "/v1/local/namespaces/d-local/blocks:reserve", nine, DELTA);
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
        assertThat(refused.body()).contains("kvstore.tenants.delta.reserved");
        String eight = nine.substring(0, nine.lastIndexOf(",{")) + "]}";
        var held = http().json("POST", "/v1/local/namespaces/d-local/blocks:reserve", eight, DELTA);
        assertThat(held.statusCode()).as(held.body()).isEqualTo(200);
        String id = TenantApiTest.field(held.body(), "reservationId");
        var tenants = http().get("/admin/tenants", ADMIN).body();
        assertThat(tenants).contains("\"reserved\":" + 8 * BLOCK);
        assertThat(http().send("DELETE", "/v1/reservations/" + id, null, null, DELTA)
                        .statusCode())
                .isEqualTo(204);
        assertThat(http().json("POST", "/v1/local/namespaces/d-local/blocks:reserve", eight, DELTA)
                        .statusCode())
                .isEqualTo(200);
    }

    @Test
    void concurrentLocalPathReservationsNeverPassTheTiersQuotaTogether() throws Exception {
        declare("e-local", EPSILON);
        int quotaBlocks = 10; // 160 KiB of DRAM, counting open reservations
        List<Future<HttpResponse<String>>> answers = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            for (int i = 0; i < 40; i++) {
                String body = "{\"blocks\":[{\"hash\":\"" + hashOf(8000 + i) + "\"}]}";
                answers.add(pool.submit(
                        () -> http().json("POST", "/v1/local/namespaces/e-local/blocks:reserve", body, EPSILON)));
            }
        }
        List<String> held = new ArrayList<>();
        for (Future<HttpResponse<String>> f : answers) {
            HttpResponse<String> r = f.get();
            assertThat(r.statusCode()).as(r.body()).isIn(200, 507);
            if (r.statusCode() == 200) {
                held.add(TenantApiTest.field(r.body(), "reservationId"));
            }
        }
        assertThat(held).hasSize(quotaBlocks);
        for (String id : held) {
            assertThat(http().send("DELETE", "/v1/reservations/" + id, null, null, EPSILON)
                            .statusCode())
                    .isEqualTo(204);
        }
    }

    @Test
    void storesOverHttpCountATenantsOpenReservationsSoACommitCannotPassItsQuota() throws Exception {
        declare("z-1", ZETA);
        int quotaBlocks = 10; // 160 KiB of DRAM
        StringBuilder blocks = new StringBuilder("[");
        for (int i = 0; i < quotaBlocks; i++) {
            blocks.append(i == 0 ? "" : ",")
                    .append("{\"hash\":\"")
                    .append(hashOf(9000 + i))
                    .append("\"}");
        }
        var reserved =
                http().json("POST", "/v1/local/namespaces/z-1/blocks:reserve", "{\"blocks\":" + blocks + "]}", ZETA);
        assertThat(reserved.statusCode()).as(reserved.body()).isEqualTo(200);
        // the reservation holds all of zeta's DRAM quota: a store over HTTP beside it is refused
        assertQuotaRefusal(storeOne("z-1", ZETA, 9100), "tenant zeta: DRAM quota 160 KiB reached");
        store("z-1", ZETA, 9100, quotaBlocks);
        var committed = http().json(
                        "POST",
                        "/v1/local/namespaces/z-1/blocks:commit",
                        "{\"reservationId\":\"" + TenantApiTest.field(reserved.body(), "reservationId") + "\"}",
                        ZETA);
        assertThat(committed.statusCode()).as(committed.body()).isEqualTo(200);
        assertThat(bytes("zeta", "DRAM")).isLessThanOrEqualTo(quotaBlocks * BLOCK);
    }
}
