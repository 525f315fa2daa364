package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The same-host path ({@code /v1/local}) keeps the one-sided path's rules, since both reserve through one
 * service: a tenant cannot reserve all of DRAM or hold slots past the cap, a parent cycle is refused, a reservation
 * is not committed past its expiry, and a malformed request names its field.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.local.enabled=true",
            "kvstore.tiers.dram.capacity=2MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.enabled=false"
        })
class LocalPathLimitsTest {

    @LocalServerPort
    int port;

    private Http http() {
        return new Http(port);
    }

    private static String blocks(List<BlockHash> hashes) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < hashes.size(); i++) {
            out.append(i == 0 ? "" : ",")
                    .append("{\"hash\":\"")
                    .append(hashes.get(i).hex())
                    .append("\"}");
        }
        return out.append(']').toString();
    }

    @Test
    void aTenantCannotReserveAllOfDramThroughTheLocalPath() throws Exception {
        var declared = http().json("PUT", "/v1/namespaces/greedy", TestLayout.declaration("m"));
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(128, 9));
        String path = "/v1/local/namespaces/greedy/blocks:reserve";

        var hour = http().json("POST", path, "{\"blocks\":" + blocks(hashes) + ",\"timeoutSeconds\":86400}");
        assertThat(hour.statusCode()).isEqualTo(400);
        assertThat(hour.body()).contains("kvstore.limits.max-reservation-timeout", "\"field\":\"timeoutSeconds\"");

        var all = http().json("POST", path, "{\"blocks\":" + blocks(hashes) + "}");
        assertThat(all.statusCode()).as(all.body()).isEqualTo(429);
        assertThat(all.body()).contains("kvstore.limits.reserved-fraction-per-tenant");

        var half = http().json("POST", path, "{\"blocks\":" + blocks(hashes.subList(0, 4)) + "}");
        assertThat(half.statusCode()).as(half.body()).isEqualTo(200);
        String id = TenantApiTest.field(half.body(), "reservationId");
        assertThat(http().send("DELETE", "/v1/reservations/" + id, null, null).statusCode())
                .isEqualTo(204);
    }

    @Test
    void aReservationPastItsExpiryIsNotCommittedIntoTheNamespaceDeclaredAgainSince() throws Exception {
        var declared = http().json("PUT", "/v1/namespaces/lapse", TestLayout.declaration("m"));
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        BlockHash h = TestLayout.hashes(TestLayout.tokens(16, 5)).getFirst();
        var reserved = http().json(
                        "POST",
                        "/v1/local/namespaces/lapse/blocks:reserve",
                        "{\"blocks\":" + blocks(List.of(h)) + ",\"timeoutSeconds\":1}");
        assertThat(reserved.statusCode()).as(reserved.body()).isEqualTo(200);
        String id = TenantApiTest.field(reserved.body(), "reservationId");
        Thread.sleep(1_100); // expired: a delete no longer waits for it (the engine's sweep may not have run yet)

        var deleted = http().send("DELETE", "/v1/namespaces/lapse", null, null);
        assertThat(deleted.statusCode()).as(deleted.body()).isIn(200, 204);
        var again = http().json("PUT", "/v1/namespaces/lapse", TestLayout.declaration("m"));
        assertThat(again.statusCode()).as(again.body()).isIn(200, 201);

        var commit =
                http().json("POST", "/v1/local/namespaces/lapse/blocks:commit", "{\"reservationId\":\"" + id + "\"}");
        assertThat(commit.statusCode()).as(commit.body()).isEqualTo(404);
        assertThat(commit.body()).contains("expired");
        var lookup =
                http().json("POST", "/v1/lookup", "{\"namespace\":\"lapse\",\"blockHashes\":[\"" + h.hex() + "\"]}");
        assertThat(lookup.body())
                .as("a block of the deleted declaration, never written, in the new one")
                .contains("\"matchedBlocks\":0");
    }

    @Test
    void malformedLocalRequestsNameTheirField() throws Exception {
        var declared = http().json("PUT", "/v1/namespaces/shapes", TestLayout.declaration("m"));
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        BlockHash h = TestLayout.hashes(TestLayout.tokens(16, 3)).getFirst();
        String reserve = "/v1/local/namespaces/shapes/blocks:reserve";

        var empty = http().json("POST", reserve, "{\"blocks\":[]}");
        assertThat(empty.statusCode()).isEqualTo(400);
        assertThat(empty.headers().firstValue("Content-Type"))
                .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
        assertThat(empty.body()).contains("\"field\":\"blocks\"", "at least one block");

        var nullBlock = http().json("POST", reserve, "{\"blocks\":[{\"hash\":\"" + h.hex() + "\"},null]}");
        assertThat(nullBlock.statusCode()).isEqualTo(400);
        assertThat(nullBlock.body()).contains("\"field\":\"blocks[1]\"");

        var noHash = http().json("POST", reserve, "{\"blocks\":[{\"parent\":\"" + h.hex() + "\"}]}");
        assertThat(noHash.statusCode()).isEqualTo(400);
        assertThat(noHash.body()).contains("\"field\":\"blocks[0].hash\"", "is required");

        var selfParent = http().json(
                        "POST",
                        reserve,
                        "{\"blocks\":[{\"hash\":\"" + h.hex() + "\",\"parent\":\"" + h.hex() + "\"}]}");
        assertThat(selfParent.statusCode()).isEqualTo(400);
        assertThat(selfParent.body()).contains("names itself as its parent");

        var noId = http().json("POST", "/v1/local/namespaces/shapes/blocks:commit", "{\"crc32c\":{}}");
        assertThat(noId.statusCode()).isEqualTo(400);
        assertThat(noId.body()).contains("\"field\":\"reservationId\"", "is required");

        var noHashes = http().json("POST", "/v1/local/namespaces/shapes/blocks:lease", "{}");
        assertThat(noHashes.statusCode()).isEqualTo(400);
        assertThat(noHashes.body()).contains("\"field\":\"blockHashes\"");
    }
}
