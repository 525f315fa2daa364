package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.TierId;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.quota.TenantUsage;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * A store racing the delete of its namespace: an upload whose block is past the namespace check, its slot
 * being filled from a slow client, when the namespace is deleted (and perhaps declared anew by another tenant).
 * The block either lands before the delete and goes with it, or is refused; it never stays under the deleted
 * name, never lands in the next declaration of the name, and every tenant's bytes stay equal to the copies the
 * engine holds for it.
 *
 * <p>The blocks here are 128 KiB, larger than what the store reads before it takes a slot (64 KiB), so half a
 * block sent holds the store inside the write; alpha's DRAM quota makes its charge, taken once the namespace
 * check passed, visible from the test.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.tiers.dram.capacity=4MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.capacity=8MB",
            "kvstore.tiers.nvme.file-size=1MB",
            "kvstore.tiers.nvme.slab-size=256KB",
            "kvstore.transport.enabled=false",
            "kvstore.tenants.alpha.dram=2MB",
            "kvstore.tokens[0].tenant=alpha",
            "kvstore.tokens[0].token=alpha-token-0123456789",
            "kvstore.tokens[0].write=*",
            "kvstore.tokens[1].tenant=beta",
            "kvstore.tokens[1].token=beta-token-0123456789",
            "kvstore.tokens[1].write=*"
        })
class NamespaceDeleteRaceTest {

    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final String[] BETA = {"Authorization", "Bearer beta-token-0123456789"};
    /** 16 layers x 2 KV heads x 64 dims x fp16 x 16 tokens x (K, V). */
    static final int BLOCK_BYTES = 2 * 16 * 2 * 64 * 2 * 16;

    static final String DECLARATION = """
            {"model":"m","layout":{"layers":16,"kvHeads":2,"headDim":64,"dtype":"float16","blockSize":16},
             "hashScheme":"sha256_cbor","hashSeed":"0"}""";

    @LocalServerPort
    int port;

    @Autowired
    TierEngine engine;

    @Autowired
    TenantUsage usage;

    @Autowired
    NamespaceRegistry namespaces;

    /** An upload of one block whose first part is sent; {@link #finish} sends the rest. */
    private record Upload(PipedOutputStream out, byte[] rest, CompletableFuture<HttpResponse<String>> response) {

        HttpResponse<String> finish() throws Exception {
            out.write(rest);
            out.close();
            return response.get(30, TimeUnit.SECONDS);
        }
    }

    private void declare(String ns, String[] token) throws Exception {
        var r = new Http(port).json("PUT", "/v1/namespaces/" + ns, DECLARATION, token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    }

    /**
     * Starts alpha's upload of {@code block} under {@code hash} into {@code ns} and sends its frame up to the middle
     * of the block: returns once the store charged alpha for it, past the namespace check, filling its slot.
     */
    private Upload startUpload(String ns, BlockHash hash, byte[] block) throws Exception {
        byte[] frame = Http.frames(List.of(hash), List.of(block), null);
        int cut = frame.length - BLOCK_BYTES / 4;
        var in = new PipedInputStream(1 << 20);
        var out = new PipedOutputStream(in);
        var request = HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/v1/namespaces/" + ns + "/blocks"))
                .header("Content-Type", "application/octet-stream")
                .header(ALPHA[0], ALPHA[1])
                .PUT(HttpRequest.BodyPublishers.ofInputStream(() -> in))
                .build();
        long before = usage.bytes("alpha", TierId.DRAM);
        var response = Http.CLIENT.sendAsync(request, HttpResponse.BodyHandlers.ofString());
        out.write(frame, 0, cut);
        out.flush();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (usage.bytes("alpha", TierId.DRAM) < before + BLOCK_BYTES) {
            assertThat(System.nanoTime())
                    .as("the store charged alpha for its block")
                    .isLessThan(until);
            Thread.sleep(5);
        }
        return new Upload(out, Arrays.copyOfRange(frame, cut, frame.length), response);
    }

    /** alpha's delete of {@code ns}, sent now; its answer, or null when it has not come within 2 s. */
    private CompletableFuture<HttpResponse<String>> deleteAsync(String ns) {
        return Http.CLIENT.sendAsync(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/namespaces/" + ns))
                        .header(ALPHA[0], ALPHA[1])
                        .DELETE()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static boolean answeredWithin2s(CompletableFuture<HttpResponse<String>> call) throws Exception {
        try {
            call.get(2, TimeUnit.SECONDS);
            return true;
        } catch (TimeoutException stillWaiting) {
            return false;
        }
    }

    /** A store cut short by the delete answers a problem, not a 500; one that completed stored its block. */
    private static void assertStoreAnswer(HttpResponse<String> put) {
        assertThat(put.statusCode()).as("the racing store: " + put.body()).isIn(200, 404, 409);
        if (put.statusCode() == 200) {
            assertThat(put.body()).contains("\"storedBlocks\":1");
        } else {
            assertThat(put.headers().firstValue("Content-Type"))
                    .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
        }
    }

    /**
     * alpha's block is past the namespace check when alpha deletes the namespace; the rest of the block comes
     * after the delete was answered (or, where the delete waits for the store, while it waits). The namespace is
     * then gone with every block stored under it.
     */
    @Test
    void aStoreRacingTheDeleteOfItsNamespaceLeavesNoBlockUnderTheDeletedName() throws Exception {
        declare("race-a", ALPHA);
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 5100)).getFirst();
        byte[] block = new byte[BLOCK_BYTES];
        new java.util.Random(5100).nextBytes(block);
        Upload upload = startUpload("race-a", hash, block);

        var delete = deleteAsync("race-a");
        boolean deletedFirst = answeredWithin2s(delete);
        var put = upload.finish();
        var deleted = delete.get(30, TimeUnit.SECONDS);

        String story = "delete answered " + deleted.statusCode() + (deletedFirst ? " before" : " after")
                + " the rest of the block was sent; store " + put.statusCode() + " " + put.body();
        assertThat(deleted.statusCode())
                .as(story + "; delete: " + deleted.body())
                .isEqualTo(200);
        assertStoreAnswer(put);
        engine.awaitMoves();
        assertThat(namespaces.declared("race-a")).isNull();
        assertThat(engine.namespaceBlockCount("race-a"))
                .as(story + ": blocks the tier still holds under the deleted namespace")
                .isZero();
        assertAccountsMatchTheEngine(story);
    }

    /**
     * As above, and beta declares the name before the rest of alpha's block arrives (when alpha's delete was
     * answered by then): alpha's block never lands in beta's namespace, and beta is not charged for it.
     */
    @Test
    void aStoreRacingADeleteNeverLandsInTheNextTenantsDeclarationOfTheName() throws Exception {
        declare("race-b", ALPHA);
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 5200)).getFirst();
        byte[] block = new byte[BLOCK_BYTES];
        new java.util.Random(5200).nextBytes(block);
        Upload upload = startUpload("race-b", hash, block);

        var delete = deleteAsync("race-b");
        boolean deletedFirst = answeredWithin2s(delete);
        if (deletedFirst) {
            assertThat(delete.get().statusCode()).as(delete.get().body()).isEqualTo(200);
            declare("race-b", BETA);
        }
        var put = upload.finish();
        var deleted = delete.get(30, TimeUnit.SECONDS);
        assertThat(deleted.statusCode()).as(deleted.body()).isEqualTo(200);
        if (!deletedFirst) {
            declare("race-b", BETA);
        }

        String story = "delete answered " + (deletedFirst ? "before" : "after") + " the rest of the block was sent;"
                + " store " + put.statusCode() + " " + put.body();
        assertStoreAnswer(put);
        var lookup = new Http(port)
                .json(
                        "POST",
                        "/v1/lookup",
                        "{\"namespace\":\"race-b\",\"blockHashes\":[\"" + hash.hex() + "\"]}",
                        BETA);
        assertThat(lookup.body()).as(story + ": beta's lookup of alpha's block").contains("\"matchedBlocks\":0");
        engine.awaitMoves();
        assertThat(usage.bytes("beta", TierId.DRAM) + usage.bytes("beta", TierId.NVME))
                .as(story + ": bytes booked to beta, which stored nothing")
                .isZero();
        assertAccountsMatchTheEngine(story);
    }

    /** Every tenant's bytes per tier equal the lengths of its namespaces' copies the engine holds there. */
    private void assertAccountsMatchTheEngine(String step) {
        TenantAccounts.assertMatchTheEngine(engine, namespaces, usage, step);
    }
}
