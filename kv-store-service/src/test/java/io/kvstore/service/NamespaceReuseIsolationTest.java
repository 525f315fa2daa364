package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A namespace name deleted by one tenant and declared by another: what the first tenant still holds under
 * that name (an open reservation, an upload still streaming) never writes into the second tenant's namespace. Also: a malformed LoRA
 * name in a pin by token ids is a client error.
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

    static final Path DATA_DIR = TempDirs.create("kvstore-namespace-reuse-test");
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final String[] BETA = {"Authorization", "Bearer beta-token-0123456789"};

    @DynamicPropertySource
    static void dataDir(DynamicPropertyRegistry registry) {
        registry.add("kvstore.data-dir", DATA_DIR::toString);
    }

    @LocalServerPort
    int port;

    private static String hashOf(int seed) {
        return TestLayout.hashes(TestLayout.tokens(1, seed)).getFirst().hex();
    }

    /**
     * alpha reserves a block in its namespace, deletes the namespace (the open reservation does not stop
     * it), beta declares the same name, and alpha then commits the old reservation through another of its
     * namespaces: the block lands in beta's namespace, written by alpha.
     */
    @Test
    void aReservationCannotOutliveItsNamespaceIntoAnotherTenants() throws Exception {
        var http = new Http(port);
        String decl = TestLayout.declaration("m");
        assertThat(http.json("PUT", "/v1/namespaces/a-x", decl, ALPHA).statusCode())
                .isEqualTo(201);
        assertThat(http.json("PUT", "/v1/namespaces/a-y", decl, ALPHA).statusCode())
                .isEqualTo(201);
        String hash = hashOf(7001);
        var reserved = http.json(
                "POST", "/v1/local/namespaces/a-x/blocks:reserve", "{\"blocks\":[{\"hash\":\"" + hash + "\"}]}", ALPHA);
        assertThat(reserved.statusCode()).as(reserved.body()).isEqualTo(200);
        String id = TenantApiTest.field(reserved.body(), "reservationId");

        var deleted = http.send("DELETE", "/v1/namespaces/a-x", null, null, ALPHA);
        var declared = http.json("PUT", "/v1/namespaces/a-x", decl, BETA);
        var commit = http.json(
                "POST", "/v1/local/namespaces/a-y/blocks:commit", "{\"reservationId\":\"" + id + "\"}", ALPHA);
        var lookup =
                http.json("POST", "/v1/lookup", "{\"namespace\":\"a-x\",\"blockHashes\":[\"" + hash + "\"]}", BETA);
        assertThat(lookup.body())
                .as("delete " + deleted.statusCode() + " " + deleted.body() + "; beta declare " + declared.statusCode()
                        + "; alpha commit " + commit.statusCode() + " " + commit.body() + "; beta lookup "
                        + lookup.body())
                .contains("\"matchedBlocks\":0");
    }

    /** A pin by token ids whose lora has an unpaired surrogate is a client error, not a 500. */
    @Test
    void aPinWithAMalformedLoraIsA400() throws Exception {
        var http = new Http(port);
        assertThat(http.json("PUT", "/v1/namespaces/a-pin", TestLayout.declaration("m"), ALPHA)
                        .statusCode())
                .isEqualTo(201);
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
        assertThat(http.json("PUT", "/v1/namespaces/a-up", decl, ALPHA).statusCode())
                .isEqualTo(201);
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
}
