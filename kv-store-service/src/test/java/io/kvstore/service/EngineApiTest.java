package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/** The engine API over real HTTP: good and bad input for every endpoint under /v1. */
class EngineApiTest extends ServiceTest {

    private String declare(String ns) throws Exception {
        var r = http.json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("m"));
        assertThat(r.statusCode()).as(r.body()).isIn(200, 201);
        return ns;
    }

    private List<BlockHash> store(String ns, int blocks, int seed) throws Exception {
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(blocks, seed));
        var r = http.putBytes(
                "/v1/namespaces/" + ns + "/blocks",
                "application/octet-stream",
                Http.frames(hashes, TestLayout.blocks(blocks, seed), null));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return hashes;
    }

    @Test
    void namespaceDeclarationIsIdempotentAndDerivesBlockBytes() throws Exception {
        var first = http.json("PUT", "/v1/namespaces/decl", TestLayout.declaration("m"));
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).contains("\"blockBytes\":" + TestLayout.BLOCK_BYTES, "\"hashBytes\":32");
        assertThat(http.json("PUT", "/v1/namespaces/decl", TestLayout.declaration("m"))
                        .statusCode())
                .isEqualTo(200);
        assertThat(http.get("/v1/namespaces/decl").body()).contains("\"dtype\":\"float16\"");
        assertThat(http.get("/v1/namespaces").body()).contains("\"decl\"");
    }

    @Test
    void redeclaringWithAnotherLayoutIsAConflict() throws Exception {
        declare("conflict");
        var r = http.json(
                "PUT", "/v1/namespaces/conflict", TestLayout.declaration("m").replace("\"layers\":2", "\"layers\":4"));
        assertThat(r.statusCode()).isEqualTo(409);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    }

    @Test
    void invalidDeclarationsNameTheField() throws Exception {
        var negative = http.json(
                "PUT", "/v1/namespaces/bad", TestLayout.declaration("m").replace("\"headDim\":64", "\"headDim\":-1"));
        assertThat(negative.statusCode()).isEqualTo(400);
        assertThat(negative.body()).contains("\"field\":\"layout.headDim\"");
        var dtype = http.json(
                "PUT", "/v1/namespaces/bad", TestLayout.declaration("m").replace("float16", "float13"));
        assertThat(dtype.body()).contains("\"field\":\"layout.dtype\"", "bfloat16");
        var wrongType = http.json(
                "PUT", "/v1/namespaces/bad", TestLayout.declaration("m").replace("\"layers\":2", "\"layers\":\"two\""));
        assertThat(wrongType.statusCode()).isEqualTo(400);
        assertThat(wrongType.body()).contains("\"field\":\"layout.layers\"").doesNotContain("at tools.jackson");
        var notJson = http.json("PUT", "/v1/namespaces/bad", "{\"model\":");
        assertThat(notJson.statusCode()).isEqualTo(400);
        var badName = http.json("PUT", "/v1/namespaces/b%20d", TestLayout.declaration("m"));
        assertThat(badName.statusCode()).isEqualTo(400);
        assertThat(badName.body()).contains("\"field\":\"namespace\"");
        var noSeed = http.json(
                "PUT", "/v1/namespaces/bad", TestLayout.declaration("m").replace(",\"hashSeed\":\"0\"", ""));
        assertThat(noSeed.body()).contains("\"field\":\"hashSeed\"");
    }

    @Test
    void lookupStopsAtFirstMissingBlock() throws Exception {
        declare("gap");
        int[] tokens = TestLayout.tokens(8, 11);
        List<BlockHash> all = TestLayout.hashes(tokens);
        var r = http.putBytes(
                "/v1/namespaces/gap/blocks",
                "application/octet-stream",
                Http.frames(all.subList(0, 5), TestLayout.blocks(5, 11), null));
        assertThat(r.statusCode()).isEqualTo(200);
        var lookup = http.json(
                "POST", "/v1/lookup", "{\"namespace\":\"gap\",\"tokenIds\":" + TestLayout.tokenJson(tokens) + "}");
        assertThat(lookup.body()).contains("\"matchedBlocks\":5", "\"matchedTokens\":80", "\"tiers\":[\"DRAM\"");
    }

    @Test
    void badLookupsAreRefusedNamingTheField() throws Exception {
        declare("lk");
        assertThat(http.json("POST", "/v1/lookup", "{\"namespace\":\"nope\",\"blockHashes\":[]}")
                        .statusCode())
                .isEqualTo(404);
        var hex = http.json(
                "POST", "/v1/lookup", "{\"namespace\":\"lk\",\"blockHashes\":[\"" + "ab".repeat(32) + "\",\"zz\"]}");
        assertThat(hex.statusCode()).isEqualTo(400);
        assertThat(hex.body()).contains("\"field\":\"blockHashes[1]\"");
        var shortHash = http.json("POST", "/v1/lookup", "{\"namespace\":\"lk\",\"blockHashes\":[\"abcd\"]}");
        assertThat(shortHash.body()).contains("\"field\":\"blockHashes[0]\"", "32");
        var both = http.json("POST", "/v1/lookup", "{\"namespace\":\"lk\",\"blockHashes\":[],\"tokenIds\":[1]}");
        assertThat(both.statusCode()).isEqualTo(400);
        var neither = http.json("POST", "/v1/lookup", "{\"namespace\":\"lk\"}");
        assertThat(neither.statusCode()).isEqualTo(400);
        var negativeToken = http.json("POST", "/v1/lookup", "{\"namespace\":\"lk\",\"tokenIds\":[1,-2]}");
        assertThat(negativeToken.body()).contains("\"field\":\"tokenIds\"", "position 1");
        var textTokens = http.json("POST", "/v1/lookup", "{\"namespace\":\"lk\",\"tokenIds\":[\"a\"]}");
        assertThat(textTokens.statusCode()).isEqualTo(400);
        assertThat(textTokens.body()).contains("\"field\":\"tokenIds[0]\"");
        var fractionalToken = http.json("POST", "/v1/lookup", "{\"namespace\":\"lk\",\"tokenIds\":[1,1.5]}");
        assertThat(fractionalToken.statusCode())
                .as("a token id of 1.5 is not token 1")
                .isEqualTo(400);
        assertThat(fractionalToken.body()).contains("\"field\":\"tokenIds[1]\"");
        var bogusAccept = http.send("GET", "/v1/namespaces", null, null, "Accept", "bogus");
        assertThat(bogusAccept.statusCode()).isEqualTo(406);
        assertThat(bogusAccept.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(bogusAccept.body()).contains("\"status\":406");
        var xml = http.send("POST", "/v1/lookup", "application/xml", "<lookup/>");
        assertThat(xml.statusCode()).isEqualTo(415);
        assertThat(xml.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    }

    @Test
    void storeRefusesFramesThatDoNotMatchTheLayout() throws Exception {
        declare("frames");
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(1, 5));
        byte[] body = Http.frames(hashes, List.of(new byte[100]), null);
        var wrongLength = http.putBytes("/v1/namespaces/frames/blocks", "application/octet-stream", body);
        assertThat(wrongLength.statusCode()).isEqualTo(400);
        assertThat(wrongLength.body()).contains("frame 0", "length is 100", String.valueOf(TestLayout.BLOCK_BYTES));
        byte[] truncated = Http.frames(hashes, TestLayout.blocks(1, 5), null);
        var cut = http.putBytes(
                "/v1/namespaces/frames/blocks",
                "application/octet-stream",
                java.util.Arrays.copyOf(truncated, truncated.length - 10));
        assertThat(cut.statusCode()).isEqualTo(400);
        assertThat(cut.body()).contains("ends after");
        var json = http.putBytes("/v1/namespaces/frames/blocks", "application/json", body);
        assertThat(json.statusCode()).isEqualTo(415);
        var unknown = http.putBytes("/v1/namespaces/unknown/blocks", "application/octet-stream", truncated);
        assertThat(unknown.statusCode()).isEqualTo(404);
        List<BlockHash> many = TestLayout.hashes(TestLayout.tokens(70, 6));
        var tooLarge = http.putBytes(
                "/v1/namespaces/frames/blocks",
                "application/octet-stream",
                Http.frames(many, TestLayout.blocks(70, 6), null));
        assertThat(tooLarge.statusCode()).isEqualTo(413);
    }

    @Test
    void storingTheSameKeyWithOtherBytesIsAConflict() throws Exception {
        declare("dup");
        List<BlockHash> hashes = store("dup", 1, 21);
        var r = http.putBytes(
                "/v1/namespaces/dup/blocks",
                "application/octet-stream",
                Http.frames(hashes, TestLayout.blocks(1, 99), null));
        assertThat(r.statusCode()).isEqualTo(409);
    }

    @Test
    void fetchOfAMissingBlockIs404NamingIt() throws Exception {
        declare("fetch404");
        List<BlockHash> hashes = store("fetch404", 2, 31);
        String missing = "cd".repeat(32);
        var r = http.fetch("fetch404", "{\"blockHashes\":[\"" + hashes.get(0).hex() + "\",\"" + missing + "\"]}");
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(new String(r.body())).contains(missing, "blockHashes[1]");
        assertThat(http.fetch("fetch404", "{\"blockHashes\":[\"xyz\"]}").statusCode())
                .isEqualTo(400);
    }

    @Test
    void deletedBlockIsGoneAndDeletingItAgainIs404() throws Exception {
        declare("del");
        List<BlockHash> hashes = store("del", 3, 41);
        assertThat(http.send(
                                "DELETE",
                                "/v1/namespaces/del/blocks/" + hashes.get(1).hex(),
                                null,
                                null)
                        .statusCode())
                .isEqualTo(204);
        assertThat(http.send(
                                "DELETE",
                                "/v1/namespaces/del/blocks/" + hashes.get(1).hex(),
                                null,
                                null)
                        .statusCode())
                .isEqualTo(404);
        var lookup =
                http.json("POST", "/v1/lookup", "{\"namespace\":\"del\",\"blockHashes\":" + Http.hexList(hashes) + "}");
        assertThat(lookup.body()).contains("\"matchedBlocks\":1");
    }

    @Test
    void aNamespacesBlocksAreListedInHexOrderPageByPage() throws Exception {
        declare("listed");
        declare("other");
        List<BlockHash> hashes = store("listed", 5, 61);
        store("other", 2, 62);
        http.send("DELETE", "/v1/namespaces/listed/blocks/" + hashes.get(4).hex(), null, null);
        List<String> want =
                hashes.subList(0, 4).stream().map(BlockHash::hex).sorted().toList();
        var first = http.get("/v1/namespaces/listed/blocks?limit=3");
        assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
        assertThat(first.body())
                .isEqualTo("{\"blockHashes\":[\"" + String.join("\",\"", want.subList(0, 3)) + "\"],\"next\":\""
                        + want.get(2) + "\"}");
        var last = http.get("/v1/namespaces/listed/blocks?limit=3&after=" + want.get(2));
        assertThat(last.body()).isEqualTo("{\"blockHashes\":[\"" + want.get(3) + "\"]}");
        assertThat(http.get("/v1/namespaces/listed/blocks?limit=0").body()).contains("\"field\":\"limit\"");
        assertThat(http.get("/v1/namespaces/listed/blocks?after=xyz").body()).contains("\"field\":\"after\"");
        assertThat(http.get("/v1/namespaces/nowhere/blocks").statusCode()).isEqualTo(404);
    }

    @Test
    void aNamespaceMayDeclareItsLoraAndExtraKeys() throws Exception {
        String decl =
                TestLayout.declaration("m").replaceFirst("\\}$", ",\"lora\":\"sql-lora\",\"extraKeys\":[\"salt\"]}");
        var r = http.json("PUT", "/v1/namespaces/lora-ns", decl);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        assertThat(http.get("/v1/namespaces/lora-ns").body())
                .contains("\"lora\":\"sql-lora\"", "\"extraKeys\":[\"salt\"]");
        assertThat(http.json("PUT", "/v1/namespaces/lora-ns", decl).statusCode())
                .isEqualTo(200);
        assertThat(http.json("PUT", "/v1/namespaces/lora-ns", TestLayout.declaration("m"))
                        .statusCode())
                .as("another LoRA is another namespace")
                .isEqualTo(409);
        assertThat(http.get("/v1/namespaces/" + declare("plain")).body()).doesNotContain("\"lora\"", "extraKeys");
        var tooMany = http.json(
                "PUT", "/v1/namespaces/lora-bad", decl.replace("[\"salt\"]", "[" + "\"k\",".repeat(16) + "\"k\"]"));
        assertThat(tooMany.statusCode()).isEqualTo(400);
        assertThat(tooMany.body()).contains("\"field\":\"extraKeys\"");
    }

    @Test
    void deletingANamespaceRemovesItsBlocksAndDeclaration() throws Exception {
        declare("gone");
        List<BlockHash> hashes = store("gone", 4, 51);
        var r = http.send("DELETE", "/v1/namespaces/gone", null, null);
        assertThat(r.body()).contains("\"deletedBlocks\":4");
        assertThat(http.get("/v1/namespaces/gone").statusCode()).isEqualTo(404);
        declare("gone");
        var lookup = http.json(
                "POST", "/v1/lookup", "{\"namespace\":\"gone\",\"blockHashes\":" + Http.hexList(hashes) + "}");
        assertThat(lookup.body()).contains("\"matchedBlocks\":0");
    }

    @Test
    void leasedBlocksCannotBeDeletedUntilReleased() throws Exception {
        declare("lease");
        List<BlockHash> hashes = store("lease", 2, 61);
        var lookup = http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"lease\",\"lease\":true,\"blockHashes\":" + Http.hexList(hashes) + "}");
        String id = lookup.body().replaceAll(".*\"lease\":\\{\"id\":\"([^\"]+)\".*", "$1");
        assertThat(lookup.body()).contains("\"blocks\":2", "expiresAt");
        assertThat(http.get("/v1/leases/" + id).statusCode()).isEqualTo(200);
        assertThat(http.send(
                                "DELETE",
                                "/v1/namespaces/lease/blocks/" + hashes.get(0).hex(),
                                null,
                                null)
                        .statusCode())
                .isEqualTo(409);
        assertThat(http.send("DELETE", "/v1/leases/" + id, null, null).statusCode())
                .isEqualTo(204);
        assertThat(http.send("DELETE", "/v1/leases/" + id, null, null).statusCode())
                .isEqualTo(404);
        assertThat(http.send(
                                "DELETE",
                                "/v1/namespaces/lease/blocks/" + hashes.get(0).hex(),
                                null,
                                null)
                        .statusCode())
                .isEqualTo(204);
    }

    @Test
    void unreleasedLeaseExpiresAndFreesItsBlocks() throws Exception {
        declare("expiry");
        List<BlockHash> hashes = store("expiry", 2, 71);
        var lookup = http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"expiry\",\"lease\":true,\"blockHashes\":" + Http.hexList(hashes) + "}");
        String id = lookup.body().replaceAll(".*\"lease\":\\{\"id\":\"([^\"]+)\".*", "$1");
        long deadline = System.nanoTime() + 60_000_000_000L; // the lease lasts 10 s (ServiceTest)
        while (http.get("/v1/leases/" + id).statusCode() == 200 && System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
        assertThat(http.get("/v1/leases/" + id).statusCode()).isEqualTo(404);
        assertThat(http.send(
                                "DELETE",
                                "/v1/namespaces/expiry/blocks/" + hashes.get(0).hex(),
                                null,
                                null)
                        .statusCode())
                .isEqualTo(204);
    }

    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void unknownPathIsAProblemNotAStackTraceNorALogLine(CapturedOutput log) throws Exception {
        var r = http.get("/v1/nothing-here");
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        var method = http.send("PATCH", "/v1/lookup", "application/json", "{}");
        assertThat(method.statusCode()).isEqualTo(405);
        assertThat(method.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        // a client's mistake is answered, not logged
        assertThat(log.getAll()).doesNotContain("PATCH", "nothing-here");
    }

    @Test
    void jsonBodiesOverTheSizeLimitAreRefusedWith413() throws Exception {
        declare("big");
        String huge = "{\"namespace\":\"big\",\"tokenIds\":[" + "1,".repeat(600_000) + "1]}";
        var declared = http.json("POST", "/v1/lookup", huge);
        assertThat(declared.statusCode()).isEqualTo(413);
        assertThat(declared.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(declared.body()).contains("max-json-body");
        // chunked, with no length declared: cut off while it is read
        var chunked = Http.CLIENT.send(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + port + "/v1/lookup"))
                        .header("Content-Type", "application/json")
                        .POST(java.net.http.HttpRequest.BodyPublishers.ofInputStream(
                                () -> new java.io.ByteArrayInputStream(
                                        huge.getBytes(java.nio.charset.StandardCharsets.UTF_8))))
                        .build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(chunked.statusCode()).isEqualTo(413);
        assertThat(chunked.body()).contains("max-json-body");
    }

    @Test
    void anEngineKeepsOneConnectionForHundredsOfRequests() throws Exception {
        try (var socket = new java.net.Socket("127.0.0.1", port)) {
            var out = socket.getOutputStream();
            var in = new java.io.BufferedInputStream(socket.getInputStream());
            for (int i = 0; i < 250; i++) {
                out.write("GET /v1/namespaces HTTP/1.1\r\nHost: kvstore\r\n\r\n"
                        .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                out.flush();
                long length = -1;
                String line;
                while (!(line = asciiLine(in)).isEmpty()) {
                    String lower = line.toLowerCase(java.util.Locale.ROOT);
                    assertThat(lower).as("response %d closes the connection", i).doesNotStartWith("connection: close");
                    if (lower.startsWith("content-length:")) {
                        length = Long.parseLong(line.substring(15).trim());
                    } else if (lower.startsWith("transfer-encoding:")) {
                        throw new AssertionError("expected a sized JSON answer, got " + line);
                    }
                }
                assertThat(length).as("response %d has a body", i).isPositive();
                assertThat(in.readNBytes((int) length)).hasSize((int) length);
            }
        }
    }

    private static String asciiLine(java.io.InputStream in) throws java.io.IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new java.io.EOFException("the server closed the connection");
            }
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }

    @Test
    void aBlockThatNamesItselfAsParentIs400() throws Exception {
        declare("selfparent");
        List<BlockHash> one = TestLayout.hashes(TestLayout.tokens(1, 61));
        var r = http.putBytes(
                "/v1/namespaces/selfparent/blocks",
                "application/octet-stream",
                Http.frames(one, TestLayout.blocks(1, 61), one.getFirst()));
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("parent is the block itself", "\"field\":\"body\"");
    }

    @Test
    void aParentLinkThatClosesACycleIs400() throws Exception {
        declare("cycle");
        List<BlockHash> two = TestLayout.hashes(TestLayout.tokens(2, 62));
        // B stored with parent A (A not stored yet), then A with parent B: A would be its own ancestor
        var b = http.putBytes(
                "/v1/namespaces/cycle/blocks",
                "application/octet-stream",
                Http.frames(List.of(two.get(1)), TestLayout.blocks(1, 62), two.get(0)));
        assertThat(b.statusCode()).isEqualTo(200);
        var a = http.putBytes(
                "/v1/namespaces/cycle/blocks",
                "application/octet-stream",
                Http.frames(List.of(two.get(0)), TestLayout.blocks(1, 63), two.get(1)));
        assertThat(a.statusCode()).isEqualTo(400);
        assertThat(a.body()).contains("own ancestor");
        // within one batch too: C -> D -> C
        List<BlockHash> cd = TestLayout.hashes(TestLayout.tokens(2, 64));
        var batch = http.putBytes(
                "/v1/namespaces/cycle/blocks",
                "application/octet-stream",
                Http.frames(List.of(cd.get(0), cd.get(1)), TestLayout.blocks(2, 64), cd.get(1)));
        assertThat(batch.statusCode()).isEqualTo(400);
    }
}
