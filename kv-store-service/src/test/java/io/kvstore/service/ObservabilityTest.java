package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Prometheus names, health per tier and backend, and the OpenAPI document. */
class ObservabilityTest extends ServiceTest {

    @Test
    void prometheusExposesTheDocumentedMeterNames() throws Exception {
        http.json("PUT", "/v1/namespaces/obs", TestLayout.declaration("m"));
        var hashes = TestLayout.hashes(TestLayout.tokens(2, 7));
        http.putBytes(
                "/v1/namespaces/obs/blocks",
                "application/octet-stream",
                Http.frames(hashes, TestLayout.blocks(2, 7), null));
        http.json("POST", "/v1/lookup", "{\"namespace\":\"obs\",\"blockHashes\":" + Http.hexList(hashes) + "}");
        String body = http.get("/actuator/prometheus").body();
        for (String name : List.of(
                "kvstore_tier_capacity_bytes{tier=\"DRAM\"}",
                "kvstore_tier_used_bytes{tier=\"NVME\"}",
                "kvstore_tier_blocks{tier=\"DRAM\"}",
                "kvstore_lookup_requests_total",
                "kvstore_lookup_blocks_total",
                "kvstore_lookup_hit_blocks_total{tier=\"DRAM\"}",
                "kvstore_lookup_seconds_bucket",
                "kvstore_transfer_bytes_total{backend=\"http\",dst=\"DRAM\",src=\"http\"}",
                "kvstore_transfer_seconds",
                "kvstore_leases_active",
                "kvstore_reservations_expired_total",
                "kvstore_device_storage_fallbacks_total 0.0")) {
            assertThat(body).as(name).contains(name);
        }
        assertThat(body).containsPattern("kvstore_tier_capacity_bytes\\{tier=\"DRAM\"\\} 2097152");

        // each matched block counts once for the tier that holds it
        double hitsBefore = dramHits(body);
        http.json("POST", "/v1/lookup", "{\"namespace\":\"obs\",\"blockHashes\":" + Http.hexList(hashes) + "}");
        assertThat(dramHits(http.get("/actuator/prometheus").body())).isEqualTo(hitsBefore + 2);
    }

    private static double dramHits(String prometheus) {
        var m = java.util.regex.Pattern.compile("(?m)^kvstore_lookup_hit_blocks_total\\{tier=\"DRAM\"\\} (\\S+)$")
                .matcher(prometheus);
        assertThat(m.find())
                .as("kvstore_lookup_hit_blocks_total{tier=DRAM} is exported")
                .isTrue();
        return Double.parseDouble(m.group(1));
    }

    @Test
    void healthShowsEveryTierAndTheBackends() throws Exception {
        var r = http.get("/actuator/health");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("\"kvstore\"", "\"DRAM\"", "\"NVME\"", "\"backends\"", "NIXL backends: UCX");
    }

    @Test
    void openApiDocumentDescribesEveryControllerMapping() throws Exception {
        var r = http.get("/v3/api-docs");
        assertThat(r.statusCode()).isEqualTo(200);
        for (String path : List.of(
                "/v1/lookup",
                "/v1/namespaces/{ns}",
                "/v1/namespaces",
                "/v1/namespaces/{ns}/blocks",
                "/v1/namespaces/{ns}/blocks:fetch",
                "/v1/namespaces/{ns}/blocks/{hash}",
                "/v1/leases/{id}",
                "/v1/transport",
                "/v1/namespaces/{ns}/blocks:reserve",
                "/v1/namespaces/{ns}/blocks:commit",
                "/v1/reservations/{id}",
                "/admin/tiers",
                "/admin/eviction-policy",
                "/admin/evict",
                "/admin/pin",
                "/admin/unpin",
                "/admin/backends")) {
            assertThat(r.body()).as(path).contains("\"" + path + "\"");
        }
    }
}
