package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * A namespace name deleted by one tenant and declared by another: what the first tenant still holds under
 * that name (an open reservation, an upload still streaming) never writes into the second tenant's namespace;
 * a namespace with open reservations is not deleted until they are committed, cancelled or expired. Also: a
 * malformed LoRA name in a pin by token ids is a client error, and a leased lookup that matches nothing
 * answers no lease (one naming no block would be open to every tenant).
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
            "kvstore.tokens[1].write=*",
            "kvstore.tokens[1].one-sided=true"
        })
class NamespaceReuseIsolationTest {

    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final String[] BETA = {"Authorization", "Bearer beta-token-0123456789"};

    @LocalServerPort
    int port;

    /** Declares {@code ns} (model "m") for the token's tenant: 201, a new namespace. */
    private static void declare(Http http, String ns, String[] token) throws Exception {
        assertThat(http.json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("m"), token)
                        .statusCode())
                .isEqualTo(201);
    }

    private static String hashOf(int seed) {
        return TestLayout.hashes(TestLayout.tokens(1, seed)).getFirst().hex();
    }

    /**
     * alpha reserves a block in its namespace and tries to delete the namespace (refused while the reservation
     * is open) and to commit the reservation through another of its namespaces (refused); once the reservation
     * is cancelled, the namespace deleted and the name declared by beta, the old reservation commits nowhere.
     */
    @Test
    void aReservationCannotOutliveItsNamespaceIntoAnotherTenants() throws Exception {
        var http = new Http(port);
        declare(http, "a-x", ALPHA);
        declare(http, "a-y", ALPHA);
        String hash = hashOf(7001);
        var reserved = http.json(
                "POST", "/v1/local/namespaces/a-x/blocks:reserve", "{\"blocks\":[{\"hash\":\"" + hash + "\"}]}", ALPHA);
        assertThat(reserved.statusCode()).as(reserved.body()).isEqualTo(200);
        String id = TenantApiTest.field(reserved.body(), "reservationId");

        var refused = http.send("DELETE", "/v1/namespaces/a-x", null, null, ALPHA);
        assertThat(refused.statusCode())
                .as("delete with a reservation open: " + refused.body())
                .isEqualTo(409);
        var elsewhere = http.json(
                "POST", "/v1/local/namespaces/a-y/blocks:commit", "{\"reservationId\":\"" + id + "\"}", ALPHA);
        assertThat(elsewhere.statusCode())
                .as("commit through a-y: " + elsewhere.body())
                .isEqualTo(403);

        // the reservation gone, the name changes hands; the old reservation commits nowhere
        assertThat(http.send("DELETE", "/v1/reservations/" + id, null, null, ALPHA)
                        .statusCode())
                .isEqualTo(204);
        assertThat(http.send("DELETE", "/v1/namespaces/a-x", null, null, ALPHA).statusCode())
                .isEqualTo(200);
        declare(http, "a-x", BETA);
        for (String ns : new String[] {"a-x", "a-y"}) {
            var late = http.json(
                    "POST",
                    "/v1/local/namespaces/" + ns + "/blocks:commit",
                    "{\"reservationId\":\"" + id + "\"}",
                    ALPHA);
            assertThat(late.statusCode())
                    .as("late commit through " + ns + ": " + late.body())
                    .isIn(403, 404);
        }
        var lookup =
                http.json("POST", "/v1/lookup", "{\"namespace\":\"a-x\",\"blockHashes\":[\"" + hash + "\"]}", BETA);
        assertThat(lookup.body()).contains("\"matchedBlocks\":0");
    }

    /** A pin by token ids whose lora has an unpaired surrogate is a client error, not a 500. */
    @Test
    void aPinWithAMalformedLoraIsA400() throws Exception {
        var http = new Http(port);
        declare(http, "a-pin", ALPHA);
        var r = http.json(
                "POST",
                "/admin/pin",
                "{\"namespace\":\"a-pin\",\"tokenIds\":[1,2,3],\"lora\":\"\\ud800\"}",
                "Authorization",
                "Bearer admin-secret-0123456789");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        assertThat(r.headers().firstValue("Content-Type"))
                .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    }

    /**
     * alpha streams a batch into its namespace; between two frames it deletes the namespace and beta
     * declares the same name; the rest of alpha's upload then lands in beta's namespace.
     */
    @Test
    void anUploadInFlightCannotWriteIntoANamespaceRedeclaredByAnotherTenant() throws Exception {
        var http = new Http(port);
        String decl = TestLayout.declaration("m");
        declare(http, "a-up", ALPHA);
        var hashes = TestLayout.hashes(TestLayout.tokens(12, 9100));
        var blocks = TestLayout.blocks(12, 9100);
        byte[] first = Http.frames(hashes.subList(0, 11), blocks.subList(0, 11), null);
        byte[] second = Http.frames(java.util.List.of(hashes.get(11)), java.util.List.of(blocks.get(11)), null);
        var in = new java.io.PipedInputStream(1 << 20);
        var out = new java.io.PipedOutputStream(in);
        var request = java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create("http://127.0.0.1:" + port + "/v1/namespaces/a-up/blocks"))
                .header("Content-Type", "application/octet-stream")
                .header(ALPHA[0], ALPHA[1])
                .PUT(java.net.http.HttpRequest.BodyPublishers.ofInputStream(() -> in))
                .build();
        var response = Http.CLIENT.sendAsync(request, java.net.http.HttpResponse.BodyHandlers.ofString());
        out.write(first);
        out.flush();
        String one =
                "{\"namespace\":\"a-up\",\"blockHashes\":[\"" + hashes.get(0).hex() + "\"]}";
        long until = System.nanoTime() + 10_000_000_000L;
        while (!http.json("POST", "/v1/lookup", one, ALPHA).body().contains("\"matchedBlocks\":1")) {
            assertThat(System.nanoTime()).as("first frame stored").isLessThan(until);
            Thread.sleep(20);
        }
        var deleted = http.send("DELETE", "/v1/namespaces/a-up", null, null, ALPHA);
        var declared = http.json("PUT", "/v1/namespaces/a-up", decl, BETA);
        out.write(second);
        out.close();
        var put = response.get(30, java.util.concurrent.TimeUnit.SECONDS);
        var lookup = http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"a-up\",\"blockHashes\":[\"" + hashes.get(11).hex() + "\"]}",
                BETA);
        assertThat(lookup.body())
                .as("delete " + deleted.statusCode() + "; beta declare " + declared.statusCode() + "; alpha put "
                        + put.statusCode() + " " + put.body() + "; beta lookup " + lookup.body())
                .contains("\"matchedBlocks\":0");
    }

    /** A delete while a reservation is open is 409 and keeps the namespace; once it is cancelled, it goes. */
    @Test
    void aNamespaceWithAnOpenReservationIsDeletedOnlyOnceItIsClosed() throws Exception {
        var http = new Http(port);
        declare(http, "a-open", ALPHA);
        var reserved = http.json(
                "POST",
                "/v1/local/namespaces/a-open/blocks:reserve",
                "{\"blocks\":[{\"hash\":\"" + hashOf(7301) + "\"}]}",
                ALPHA);
        assertThat(reserved.statusCode()).as(reserved.body()).isEqualTo(200);
        String id = TenantApiTest.field(reserved.body(), "reservationId");

        var refused = http.send("DELETE", "/v1/namespaces/a-open", null, null, ALPHA);
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(409);
        assertThat(refused.body()).contains("open reservations");
        assertThat(http.get("/v1/namespaces/a-open", ALPHA).statusCode()).isEqualTo(200);

        assertThat(http.send("DELETE", "/v1/reservations/" + id, null, null, ALPHA)
                        .statusCode())
                .isEqualTo(204);
        var deleted = http.send("DELETE", "/v1/namespaces/a-open", null, null, ALPHA);
        assertThat(deleted.statusCode()).as(deleted.body()).isEqualTo(200);
        assertThat(http.get("/v1/namespaces/a-open", ALPHA).statusCode()).isEqualTo(404);
    }

    /** A leased lookup of nothing held answers no lease; one that matches answers a lease only its tenant reads. */
    @Test
    void aLeasedLookupThatMatchesNothingAnswersNoLease() throws Exception {
        var http = new Http(port);
        declare(http, "a-lease", ALPHA);
        var miss = http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"a-lease\",\"blockHashes\":[\"" + hashOf(7401) + "\"],\"lease\":true}",
                ALPHA);
        assertThat(miss.statusCode()).as(miss.body()).isEqualTo(200);
        assertThat(miss.body()).contains("\"matchedBlocks\":0").doesNotContain("\"lease\"");

        var hashes = TestLayout.hashes(TestLayout.tokens(1, 7402));
        var put = http.putBytes(
                "/v1/namespaces/a-lease/blocks",
                "application/octet-stream",
                Http.frames(hashes, TestLayout.blocks(1, 7402), null),
                ALPHA);
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        var hit = http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"a-lease\",\"blockHashes\":[\""
                        + hashes.getFirst().hex() + "\"],\"lease\":true}",
                ALPHA);
        assertThat(hit.body()).contains("\"matchedBlocks\":1").contains("\"lease\"");
        String lease = TenantApiTest.field(hit.body(), "id");
        assertThat(http.get("/v1/leases/" + lease, BETA).statusCode()).isEqualTo(403);
        assertThat(http.send("DELETE", "/v1/leases/" + lease, null, null, ALPHA).statusCode())
                .isEqualTo(204);
    }

    @org.springframework.beans.factory.annotation.Autowired
    io.kvstore.engine.TierEngine engine;

    /**
     * A block that lands under a name after its namespace was deleted (an upload or commit admitted just
     * before the delete, finishing just after it; here put straight into the engine) is not the next
     * tenant's to read: a new declaration of the name starts it empty.
     */
    @Test
    void aBlockLeftUnderADeletedNameIsNotSeenByTheNextTenantToDeclareIt() throws Exception {
        var http = new Http(port);
        var hash = TestLayout.hashes(TestLayout.tokens(1, 9300)).getFirst();
        byte[] bytes = TestLayout.blocks(1, 9300).getFirst();
        engine.put(
                new io.kvstore.block.BlockKey("a-ghost", hash), null, java.lang.foreign.MemorySegment.ofArray(bytes));
        declare(http, "a-ghost", BETA);
        var lookup = http.json(
                "POST", "/v1/lookup", "{\"namespace\":\"a-ghost\",\"blockHashes\":[\"" + hash.hex() + "\"]}", BETA);
        assertThat(lookup.statusCode()).isEqualTo(200);
        assertThat(lookup.body()).contains("\"matchedBlocks\":0");
    }
}
