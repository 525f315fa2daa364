package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.service.transport.BackendProbe;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/**
 * The one-sided path over NIXL: the service's data plane forced to a NIXL agent (UCX backend, the DRAM
 * tier registered as DRAM_SEG), and a separate JVM with its own NIXL agent standing in for an engine:
 * it reads the agent metadata and region descriptor from {@code /v1/transport}, reserves, WRITEs,
 * commits, looks up with a lease, READs back and compares; HTTP then serves the same bytes, and a
 * killed engine's lease expires. Skips without NIXL unless {@code KVSTORE_REQUIRE_NIXL=1}.
 */
@TestPropertySource(properties = "kvstore.transport.data-plane=nixl")
class OneSidedNixlPathTest extends ServiceTest {

    private static final int BLOCKS = 64;

    @BeforeAll
    static void nixlPresent() {
        var ucx = BackendProbe.nixlAvailability("UCX");
        System.out.println("NIXL UCX backend: " + ucx);
        NixlRequirement.assumeNixl(ucx.available(), () -> "skipped: NIXL's UCX backend " + ucx);
    }

    @Test
    void transportPublishesTheAgentMetadataAndTheDramSegment() throws Exception {
        var r = http.get("/v1/transport");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body())
                .contains(
                        "\"backend\":\"NIXL/UCX\"",
                        "\"dataPlane\":\"NIXL\"",
                        "\"available\":true",
                        "\"agentMetadata\":\"",
                        "\"tier\":\"DRAM\"",
                        "\"length\":2097152",
                        "\"segmentType\":\"DRAM_SEG\"",
                        "\"deviceId\":0")
                .doesNotContain("workerAddress");
        var backends = http.get("/admin/backends", ADMIN);
        assertThat(backends.body())
                .contains(
                        "\"dataPlane\":{\"plane\":\"NIXL\",\"backend\":\"NIXL/UCX\",\"available\":true",
                        "kvstore.transport.data-plane=nixl");
        assertThat(http.get("/actuator/health").body()).contains("\"plane\":\"NIXL\"");
    }

    @Test
    void engineAgentWritesCommitsLeasesAndReadsBackOverNixl() throws Exception {
        OneSidedEngines.roundTrip(http, port, "nixl-roundtrip", BLOCKS, 41, "", "NIXL/UCX");
    }

    @Test
    void anEngineAgentThatDiesHoldingALeaseHasItsBlocksFreedAfterTheTimeout() throws Exception {
        OneSidedEngines.roundTrip(http, port, "nixl-dies", BLOCKS, 43, "", "NIXL/UCX");
        OneSidedEngines.leaseDieAndExpire(http, port, "nixl-dies", BLOCKS, 43);
    }
}
