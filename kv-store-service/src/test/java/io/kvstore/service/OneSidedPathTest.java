package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.block.BlockHash;
import io.kvstore.ffm.ucx.Ucp;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/**
 * The one-sided path end to end: a separate JVM with its own UCX worker (standing in for an engine)
 * reserves slots, WRITEs blocks into kvstore's DRAM tier, commits, looks the prompt up with a lease,
 * READs the blocks back in place and compares; over shared memory (one-sided RMA) and over tcp (UCX
 * active messages). The service's data plane is forced to direct libucp here, NIXL or not; {@link
 * OneSidedNixlPathTest} runs the same round trip over NIXL. Also: what HTTP then serves is the same bytes, a reservation never committed
 * frees its slots, and an engine that dies holding a lease has its blocks freed after the timeout.
 */
@TestPropertySource(properties = "kvstore.transport.data-plane=ucx")
class OneSidedPathTest extends ServiceTest {

    private static final int BLOCKS = 64;

    @BeforeAll
    static void ucxPresent() {
        assumeTrue(Ucp.isAvailable(), () -> {
            System.out.println("SKIPPED OneSidedPathTest: libucp " + Ucp.availability());
            return "libucp " + Ucp.availability();
        });
    }

    private Process engine(String ns, int seed, String tls, String mode) throws Exception {
        return OneSidedEngines.start(port, ns, BLOCKS, seed, tls, mode);
    }

    private void roundTrip(String ns, int seed, String tls, String expectedPath) throws Exception {
        OneSidedEngines.roundTrip(http, port, ns, BLOCKS, seed, tls, expectedPath);
    }

    @Test
    void transportDescribesTheRegisteredDramTier() throws Exception {
        var r = http.get("/v1/transport");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body())
                .contains("\"available\":true", "\"tier\":\"DRAM\"", "\"length\":2097152", "\"workerAddress\":\"");
    }

    @Test
    void engineWritesCommitsLeasesAndReadsBackOverSharedMemory() throws Exception {
        roundTrip("onesided-sm", 21, "sm", "RMA");
    }

    @Test
    void engineWritesCommitsLeasesAndReadsBackOverTcp() throws Exception {
        roundTrip("onesided-tcp", 22, "tcp", "ACTIVE_MESSAGES");
    }

    @Test
    void anEngineThatDiesHoldingALeaseHasItsBlocksFreedAfterTheTimeout() throws Exception {
        roundTrip("onesided-dies", 23, "sm", "RMA");
        OneSidedEngines.leaseDieAndExpire(http, port, "onesided-dies", BLOCKS, 23);
    }

    @Test
    void aReservationNeverCommittedExpiresAndItsSlotsReturn() throws Exception {
        http.json("PUT", "/v1/namespaces/onesided-expiry", TestLayout.declaration("one-sided"));
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(4, 31));
        long expiredBefore = ExpiredReservations.count(http);
        String blocks =
                hashes.stream().map(h -> "{\"hash\":\"" + h.hex() + "\"}").collect(Collectors.joining(",", "[", "]"));
        var reserved = http.json(
                "POST",
                "/v1/namespaces/onesided-expiry/blocks:reserve",
                "{\"blocks\":" + blocks + ",\"timeoutSeconds\":1}");
        assertThat(reserved.statusCode()).as(reserved.body()).isEqualTo(200);
        assertThat(reserved.body())
                .contains("\"slots\":[{\"hash\":\"" + hashes.get(0).hex());
        String id = reserved.body().replaceAll(".*\"reservationId\":\"([^\"]+)\".*", "$1");

        ExpiredReservations.await(http, expiredBefore + 1); // the sweep expired it
        var late =
                http.json("POST", "/v1/namespaces/onesided-expiry/blocks:commit", "{\"reservationId\":\"" + id + "\"}");
        assertThat(late.statusCode()).isEqualTo(404);
        assertThat(late.body()).contains("expired");
        assertThat(http.json(
                                "POST",
                                "/v1/lookup",
                                "{\"namespace\":\"onesided-expiry\",\"blockHashes\":" + Http.hexList(hashes) + "}")
                        .body())
                .contains("\"matchedBlocks\":0");

        var again = http.json("POST", "/v1/namespaces/onesided-expiry/blocks:reserve", "{\"blocks\":" + blocks + "}");
        String second = again.body().replaceAll(".*\"reservationId\":\"([^\"]+)\".*", "$1");
        assertThat(http.send("DELETE", "/v1/reservations/" + second, null, null).statusCode())
                .isEqualTo(204);
        assertThat(http.send("DELETE", "/v1/reservations/" + second, null, null).statusCode())
                .isEqualTo(404);
    }

    @Test
    void badOneSidedRequestsAreRefusedNamingTheField() throws Exception {
        http.json("PUT", "/v1/namespaces/onesided-bad", TestLayout.declaration("one-sided"));
        var none = http.json("POST", "/v1/namespaces/onesided-bad/blocks:reserve", "{\"blocks\":[]}");
        assertThat(none.statusCode()).isEqualTo(400);
        assertThat(none.body()).contains("\"field\":\"blocks\"");
        var badHash =
                http.json("POST", "/v1/namespaces/onesided-bad/blocks:reserve", "{\"blocks\":[{\"hash\":\"xyz\"}]}");
        assertThat(badHash.statusCode()).isEqualTo(400);
        var noHash =
                http.json("POST", "/v1/namespaces/onesided-bad/blocks:reserve", "{\"blocks\":[{\"parent\":\"ab\"}]}");
        assertThat(noHash.body()).contains("\"field\":\"blocks[0].hash\"");
        String h = TestLayout.hashes(TestLayout.tokens(1, 5)).get(0).hex();
        var twice = http.json(
                "POST",
                "/v1/namespaces/onesided-bad/blocks:reserve",
                "{\"blocks\":[{\"hash\":\"" + h + "\"},{\"hash\":\"" + h + "\"}]}");
        assertThat(twice.statusCode()).isEqualTo(400);
        assertThat(twice.body()).contains("twice");
        var timeout = http.json(
                "POST",
                "/v1/namespaces/onesided-bad/blocks:reserve",
                "{\"blocks\":[{\"hash\":\"" + h + "\"}],\"timeoutSeconds\":0}");
        assertThat(timeout.body()).contains("\"field\":\"timeoutSeconds\"");
        var unknownNs =
                http.json("POST", "/v1/namespaces/nope/blocks:reserve", "{\"blocks\":[{\"hash\":\"" + h + "\"}]}");
        assertThat(unknownNs.statusCode()).isEqualTo(404);
        var unknown = http.json("POST", "/v1/namespaces/onesided-bad/blocks:commit", "{\"reservationId\":\"nope\"}");
        assertThat(unknown.statusCode()).isEqualTo(404);
        assertThat(unknown.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        var badCrc = http.json(
                "POST",
                "/v1/namespaces/onesided-bad/blocks:commit",
                "{\"reservationId\":\"nope\",\"crc32c\":{\"" + h + "\":-1}}");
        assertThat(badCrc.statusCode()).isEqualTo(400);
        assertThat(badCrc.body()).contains("unsigned 32-bit");
    }
}
