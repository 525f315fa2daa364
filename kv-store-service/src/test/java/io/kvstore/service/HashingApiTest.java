package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Hash schemes through {@code /v1/lookup}: every scheme answers the golden vectors of docs/hashing
 * (computed outside Java) for the prompt's blocks when asked for {@code allHashes}, with nothing stored;
 * bad schemes, seeds and extra keys are 400 problems naming the field.
 */
class HashingApiTest extends ServiceTest {

    private void declare(String ns, String scheme, String seedJson, int blockSize) throws Exception {
        String body = """
                {"model":"m","layout":{"layers":2,"kvHeads":2,"headDim":64,"dtype":"float16","blockSize":%d},
                 "hashScheme":"%s"%s}""".formatted(blockSize, scheme, seedJson == null ? "" : ",\"hashSeed\":" + seedJson);
        var r = http.json("PUT", "/v1/namespaces/" + ns, body);
        assertThat(r.statusCode()).as(r.body()).isIn(200, 201);
    }

    private HttpResponse<String> lookup(String ns, String tokens, String extraKeys) throws Exception {
        return http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"" + ns + "\",\"tokenIds\":" + tokens + ",\"allHashes\":true"
                        + (extraKeys == null ? "" : ",\"extraKeys\":" + extraKeys) + "}");
    }

    private static String range(int from, int n) {
        StringBuilder s = new StringBuilder("[");
        for (int i = 0; i < n; i++) {
            s.append(i == 0 ? "" : ",").append(from + i);
        }
        return s.append(']').toString();
    }

    @Test
    void lookupAnswersEveryBlockHashOfEachSchemeWithNothingStored() throws Exception {
        String multimodal = """
                {"lora":"sql-lora","cacheSalt":"tenant-a","multimodal":[
                  {"identifier":"img-c","offset":40,"length":24},{"identifier":"img-a","offset":4,"length":20},
                  {"identifier":"img-b","offset":24,"length":8}]}""";
        declare("h-sha256", "vllm:sha256", "\"0\"", 16);
        var r = lookup("h-sha256", range(0, 64), multimodal);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.body())
                .contains("\"matchedBlocks\":0")
                .contains("\"blockHashes\":[\"109373522048a9fda0db05a088d61fe64c9bbc659aafa5bfdd90b3bf88a8be68\","
                        + "\"ae2b3687f252b4ceb9d94cfb10a0807f213708f6108063b7d4107877a15fc036\","
                        + "\"63170aa6d4458653a692f2b02bad4fb880870bee7409003ee72c16a78bedc25d\","
                        + "\"38f1021573dc81f686e4e1de3bd0cd1acd80752359e777d490084e7ffb72e8f6\"]");
        declare("h-xxhash-cbor", "vllm:xxhash_cbor", "\"0\"", 16);
        assertThat(lookup("h-xxhash-cbor", range(0, 64), multimodal).body())
                .contains("\"c076b48136266cd273b24eaca56e4047\",\"ebba3def038e33d576050a38af5ebbde\","
                        + "\"7481099704b6b3967d3facef11f65f15\",\"5afd4666dc48599fc89b8686dd2eded3\"");
        declare("h-empty-seed", "vllm:xxhash", "\"\"", 16);
        assertThat(lookup("h-empty-seed", range(0, 16), null).body()).contains("42aae526c5dde62c0c54383a5dd13696");
        declare("h-kvbm", "dynamo:kvbm_v1", null, 1);
        assertThat(lookup("h-kvbm", "[0]", "{\"cacheSalt\":\"\"}").body()).contains("\"d16ff2ff5b54aeef\"");
        declare("h-router", "dynamo:router", null, 16);
        assertThat(lookup("h-router", range(0, 32), "{\"lora\":\"sql-lora\",\"cacheSalt\":\"tenant-a\"}")
                        .body())
                .contains("\"blockHashes\":[\"3dfa1f95970faa50\",\"4a6462aa4e177696\"]");
        declare("h-alias", "sha256_cbor", "\"0\"", 16);
        assertThat(http.get("/v1/namespaces/h-alias").body()).contains("\"hashScheme\":\"vllm:sha256_cbor\"");
    }

    @Test
    void promptEmbeddingHashesAreTakenAsHexOrBase64() throws Exception {
        declare("h-embeds", "vllm:sha256", "\"0\"", 16);
        // sha256("embeds of block i") for i = 0, 1, 2, as golden_vllm.py's EMBEDS
        List<byte[]> digests = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            digests.add(java.security.MessageDigest.getInstance("SHA-256").digest(("embeds of block " + i).getBytes()));
        }
        String mixed = "{\"promptEmbeds\":[\"" + java.util.HexFormat.of().formatHex(digests.get(0)) + "\",\""
                + java.util.Base64.getEncoder().encodeToString(digests.get(1)) + "\",\""
                + java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(digests.get(2)) + "\"]}";
        var r = lookup("h-embeds", "[" + "0,".repeat(49) + "0]", mixed);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.body())
                .contains("\"329ad6e53f502dc763f1aa87090ab48b1655b0f7b81c229713f45b68e444f03d\","
                        + "\"e0f487d777ceaff78dcf5d358ce9cfab197cc011b87c4a17e23af77e726c0f51\","
                        + "\"41503219f4ec0433e27d34dc02d77e38163632b40df179f2976d8df518133af9\"");
        var notHex = lookup("h-embeds", range(0, 16), "{\"promptEmbeds\":[\"zz-not-a-digest\"]}");
        assertThat(notHex.statusCode()).isEqualTo(400);
        assertThat(notHex.body()).contains("\"field\":\"extraKeys.promptEmbeds[0]\"");
        var tooFew = lookup("h-embeds", range(0, 32), "{\"promptEmbeds\":[\"" + "ab".repeat(32) + "\"]}");
        assertThat(tooFew.statusCode()).isEqualTo(400);
        assertThat(tooFew.body()).contains("\"field\":\"extraKeys.promptEmbeds\"", "2 full blocks");
    }

    @Test
    void promptEmbedsOfNonAsciiDigitsAreA400ProblemNotA500() throws Exception {
        declare("h-embeds-digits", "vllm:sha256", "\"0\"", 16);
        // 64 characters Java counts as hex digits (fullwidth A, Arabic-Indic three) but no hex digest is made of
        for (String digit : List.of("\\uFF21", "\\u0663")) {
            assertProblem(
                    lookup("h-embeds-digits", range(0, 16), "{\"promptEmbeds\":[\"" + digit.repeat(64) + "\"]}"),
                    "extraKeys.promptEmbeds[0]");
        }
    }

    @Test
    void anExtraKeyOfAnotherNameIsA400NotHashesWithoutIt() throws Exception {
        declare("h-key-names", "vllm:sha256", "\"0\"", 16);
        // the engines' own spellings: dropped silently, they would answer the hashes of no LoRA and no salt
        assertProblem(lookup("h-key-names", range(0, 32), "{\"cache_salt\":\"tenant-a\"}"), "extraKeys.cache_salt");
        assertProblem(lookup("h-key-names", range(0, 32), "{\"lora_name\":\"sql-lora\"}"), "extraKeys.lora_name");
        assertThat(lookup("h-key-names", range(0, 32), "{\"cacheSalt\":\"tenant-a\"}")
                        .statusCode())
                .isEqualTo(200); // a salt beside extraKeys instead of inside it
        var topLevel = http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"h-key-names\",\"tokenIds\":" + range(0, 32) + ",\"cacheSalt\":\"tenant-a\"}");
        assertProblem(topLevel, "cacheSalt");
    }

    @Test
    void storedBlocksMatchUnderTheHashesLookupAnswered() throws Exception {
        declare("h-store", "vllm:sha256", "\"0\"", 16);
        var first = lookup("h-store", range(500, 48), "{\"lora\":\"sql-lora\"}");
        List<BlockHash> hashes = hashesOf(first.body());
        assertThat(hashes).hasSize(3);
        var stored = http.putBytes(
                "/v1/namespaces/h-store/blocks",
                "application/octet-stream",
                Http.frames(hashes.subList(0, 2), TestLayout.blocks(2, 5), null));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        var again = lookup("h-store", range(500, 48), "{\"lora\":\"sql-lora\"}");
        assertThat(again.body()).contains("\"matchedBlocks\":2", "\"matchedTokens\":32");
        assertThat(hashesOf(again.body())).isEqualTo(hashes);
        var plain = http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"h-store\",\"tokenIds\":" + range(500, 48)
                        + ",\"extraKeys\":{\"lora\":\"sql-lora\"}}");
        assertThat(hashesOf(plain.body())).isEqualTo(hashes.subList(0, 2));
    }

    @Test
    void badSchemesSeedsAndExtraKeysAreProblemsNamingTheField() throws Exception {
        String layout = "\"model\":\"m\",\"layout\":{\"layers\":2,\"kvHeads\":2,\"headDim\":64,\"dtype\":\"float16\"}";
        var scheme = http.json("PUT", "/v1/namespaces/h-bad", "{" + layout + ",\"hashScheme\":\"vllm:md5\"}");
        assertThat(scheme.statusCode()).isEqualTo(400);
        assertThat(scheme.body()).contains("\"field\":\"hashScheme\"", "vllm:sha256");
        var noSeed = http.json("PUT", "/v1/namespaces/h-bad", "{" + layout + ",\"hashScheme\":\"vllm:sha256\"}");
        assertThat(noSeed.statusCode()).isEqualTo(400);
        assertThat(noSeed.body()).contains("\"field\":\"hashSeed\"", "PYTHONHASHSEED");
        var objectSeed = http.json(
                "PUT", "/v1/namespaces/h-bad", "{" + layout + ",\"hashScheme\":\"vllm:sha256\",\"hashSeed\":{}}");
        assertThat(objectSeed.statusCode()).isEqualTo(400);
        assertThat(objectSeed.body()).contains("\"field\":\"hashSeed\"");
        var wordSeed = http.json(
                "PUT",
                "/v1/namespaces/h-bad",
                "{" + layout + ",\"hashScheme\":\"dynamo:router\",\"hashSeed\":\"salty\"}");
        assertThat(wordSeed.statusCode()).isEqualTo(400);
        assertThat(wordSeed.body()).contains("\"field\":\"hashSeed\"", "unsigned 64-bit");

        declare("h-mm", "vllm:sha256_cbor", "\"0\"", 16);
        var past =
                lookup("h-mm", range(0, 32), "{\"multimodal\":[{\"identifier\":\"img\",\"offset\":30,\"length\":4}]}");
        assertThat(past.statusCode()).isEqualTo(400);
        assertThat(past.body()).contains("\"field\":\"extraKeys.multimodal[0]\"", "past the prompt");
        var overlap = lookup(
                "h-mm",
                range(0, 32),
                "{\"multimodal\":[{\"identifier\":\"a\",\"offset\":0,\"length\":10},"
                        + "{\"identifier\":\"b\",\"offset\":8,\"length\":4}]}");
        assertThat(overlap.statusCode()).isEqualTo(400);
        assertThat(overlap.body()).contains("\"field\":\"extraKeys.multimodal[1]\"", "overlap");
        var noLength = lookup("h-mm", range(0, 32), "{\"multimodal\":[{\"identifier\":\"a\",\"offset\":0}]}");
        assertThat(noLength.statusCode()).isEqualTo(400);
        assertThat(noLength.body()).contains("\"field\":\"extraKeys.multimodal[0]\"");
        var textOffset = lookup(
                "h-mm", range(0, 32), "{\"multimodal\":[{\"identifier\":\"a\",\"offset\":\"zero\",\"length\":2}]}");
        assertThat(textOffset.statusCode()).isEqualTo(400);
        assertThat(textOffset.body()).contains("offset");
        declare("h-dyn", "dynamo:router", null, 16);
        var dynamoImage =
                lookup("h-dyn", range(0, 32), "{\"multimodal\":[{\"identifier\":\"a\",\"offset\":0,\"length\":2}]}");
        assertThat(dynamoImage.statusCode()).isEqualTo(400);
        assertThat(dynamoImage.body()).contains("\"field\":\"extraKeys.multimodal\"");
    }

    @Test
    void everyKindOfBadHashInputIsA400ProblemNamingItsField() throws Exception {
        String layout = "\"model\":\"m\",\"layout\":{\"layers\":2,\"kvHeads\":2,\"headDim\":64,\"dtype\":\"float16\"}";
        // seeds of the wrong type: JSON true or 1.5 are no PYTHONHASHSEED, a negative number no Dynamo seed
        for (String seed : List.of("true", "1.5", "\"-1\"", "[\"0\"]", "\"0x10\"")) {
            assertProblem(
                    http.json(
                            "PUT",
                            "/v1/namespaces/h-seed",
                            "{" + layout + ",\"hashScheme\":\"vllm:sha256\",\"hashSeed\":" + seed + "}"),
                    "hashSeed");
        }
        for (String seed : List.of("-1", "true", "1.5", "\"18446744073709551616\"")) {
            assertProblem(
                    http.json(
                            "PUT",
                            "/v1/namespaces/h-seed",
                            "{" + layout + ",\"hashScheme\":\"dynamo:kvbm_v1\",\"hashSeed\":" + seed + "}"),
                    "hashSeed");
        }
        // a number is a PYTHONHASHSEED all the same
        declare("h-seed", "vllm:sha256", "0", 16);
        assertThat(lookup("h-seed", range(0, 16), null).body()).contains("\"matchedBlocks\":0");

        declare("h-odd", "vllm:sha256", "\"0\"", 16);
        String prompt = range(0, 40);
        // multimodal positions past the prompt, overlapping (one inside another, the same tokens twice),
        // empty, negative or not numbers
        assertProblem(
                mm("h-odd", prompt, "{\"identifier\":\"a\",\"offset\":38,\"length\":3}"), "extraKeys.multimodal[0]");
        assertProblem(
                mm(
                        "h-odd",
                        prompt,
                        "{\"identifier\":\"a\",\"offset\":2,\"length\":30},{\"identifier\":\"b\",\"offset\":10,\"length\":4}"),
                "extraKeys.multimodal[1]");
        assertProblem(
                mm(
                        "h-odd",
                        prompt,
                        "{\"identifier\":\"a\",\"offset\":5,\"length\":4},{\"identifier\":\"b\",\"offset\":5,\"length\":4}"),
                "extraKeys.multimodal[1]");
        assertProblem(
                mm("h-odd", prompt, "{\"identifier\":\"a\",\"offset\":5,\"length\":0}"), "extraKeys.multimodal[0]");
        assertProblem(
                mm("h-odd", prompt, "{\"identifier\":\"a\",\"offset\":-1,\"length\":2}"), "extraKeys.multimodal[0]");
        assertProblem(mm("h-odd", prompt, "{\"offset\":1,\"length\":2}"), "extraKeys.multimodal[0]");
        assertProblem(
                mm("h-odd", prompt, "{\"identifier\":\"a\",\"offset\":\"zero\",\"length\":2}"),
                "extraKeys.multimodal[0].offset");
        // an item in the trailing partial block is inside the prompt: no block carries it
        assertThat(mm("h-odd", prompt, "{\"identifier\":\"a\",\"offset\":36,\"length\":4}")
                        .statusCode())
                .isEqualTo(200);
        // non-hex hashes, from the engine or for prompt embeddings
        assertProblem(
                http.json(
                        "POST",
                        "/v1/lookup",
                        "{\"namespace\":\"h-odd\",\"blockHashes\":[\"" + "ab".repeat(32) + "\",\"xyz\"]}"),
                "blockHashes[1]");
        assertProblem(
                lookup("h-odd", range(0, 16), "{\"promptEmbeds\":[\"" + "g".repeat(64) + "\"]}"),
                "extraKeys.promptEmbeds[0]");
        assertProblem(
                http.json("POST", "/v1/lookup", "{\"namespace\":\"h-odd\",\"tokenIds\":[1,\"two\"]}"), "tokenIds[1]");

        // what the Dynamo schemes cannot represent: multimodal items, prompt embeddings, further keys
        declare("h-kvbm16", "dynamo:kvbm_v1", null, 16);
        declare("h-router2", "dynamo:router", null, 16);
        for (String ns : List.of("h-kvbm16", "h-router2")) {
            assertProblem(mm(ns, prompt, "{\"identifier\":\"a\",\"offset\":0,\"length\":2}"), "extraKeys.multimodal");
            assertProblem(
                    lookup(ns, range(0, 16), "{\"promptEmbeds\":[\"" + "ab".repeat(32) + "\"]}"),
                    "extraKeys.promptEmbeds");
            assertProblem(lookup(ns, range(0, 16), "{\"more\":[\"x\"]}"), "extraKeys.more");
        }
        declare("h-fixed", "dynamo:router", "\"1337\"", 16);
        assertProblem(lookup("h-fixed", range(0, 16), "{\"lora\":\"sql-lora\"}"), "extraKeys.lora");
    }

    private HttpResponse<String> mm(String ns, String tokens, String items) throws Exception {
        return lookup(ns, tokens, "{\"multimodal\":[" + items + "]}");
    }

    private static void assertProblem(HttpResponse<String> r, String field) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        assertThat(r.headers().firstValue("Content-Type"))
                .hasValueSatisfying(ct -> assertThat(ct).contains("application/problem+json"));
        assertThat(r.body()).as(r.body()).contains("\"field\":\"" + field + "\"");
    }

    private static List<BlockHash> hashesOf(String body) {
        String list = body.substring(body.indexOf("\"blockHashes\":[") + 15);
        list = list.substring(0, list.indexOf(']'));
        if (list.isEmpty()) {
            return List.of();
        }
        return java.util.Arrays.stream(list.split(","))
                .map(s -> BlockHash.ofHex(s.replace("\"", "")))
                .toList();
    }
}
