package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/**
 * Quotas with a device tier (emulated on host memory): HTTP stores land in HBM, reservations hold DRAM
 * slots, and a store is checked against the tier below it as against the one it lands in, the tenant's
 * open reservations counting as held in DRAM.
 */
@TestPropertySource(
        properties = {
            "kvstore.tiers.hbm.provider=emulated-device",
            "kvstore.tiers.hbm.capacity=1MB",
            "kvstore.tiers.hbm.slab-size=256KB",
            "kvstore.transport.enabled=false",
            "kvstore.local.enabled=true",
            "kvstore.tokens[0].tenant=zeta",
            "kvstore.tokens[0].token=zeta-token-0123456789",
            "kvstore.tokens[0].write=z-*",
            "kvstore.tokens[0].one-sided=true",
            "kvstore.tenants.zeta.dram=160KB"
        })
class TenantQuotaHbmTest extends ServiceTest {

    static final String[] ZETA = {"Authorization", "Bearer zeta-token-0123456789"};

    private HttpResponse<String> storeOne(String ns, int seed) throws Exception {
        List<BlockHash> hash = TestLayout.hashes(TestLayout.tokens(1, seed));
        byte[] body = Http.frames(hash, TestLayout.blocks(1, seed), null);
        return http.putBytes("/v1/namespaces/" + ns + "/blocks", "application/octet-stream", body, ZETA);
    }

    @Test
    void aStoreIntoHbmCountsTheTenantsOpenReservationsInTheDramTierBelow() throws Exception {
        var declared = http.json("PUT", "/v1/namespaces/z-hbm", TestLayout.declaration("m"), ZETA);
        assertThat(declared.statusCode()).as(declared.body()).isEqualTo(201);
        StringBuilder blocks = new StringBuilder("[");
        for (int i = 0; i < 10; i++) { // 160 KiB: all of zeta's DRAM quota
            blocks.append(i == 0 ? "" : ",")
                    .append("{\"hash\":\"")
                    .append(TestLayout.hashes(TestLayout.tokens(1, 9000 + i))
                            .getFirst()
                            .hex())
                    .append("\"}");
        }
        var reserved =
                http.json("POST", "/v1/local/namespaces/z-hbm/blocks:reserve", "{\"blocks\":" + blocks + "]}", ZETA);
        assertThat(reserved.statusCode()).as(reserved.body()).isEqualTo(200);
        // DRAM full with what zeta's own blocks hold refuses a store into HBM (its blocks go there next);
        // so does DRAM full with what zeta has reserved there
        var beside = storeOne("z-hbm", 9100);
        assertThat(beside.statusCode()).as(beside.body()).isEqualTo(507);
        assertThat(beside.body()).contains("tenant zeta: DRAM quota 160 KiB reached");
    }
}
