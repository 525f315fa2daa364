package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.engine.TierEngine;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Every registered endpoint, with a token that may do everything, sent malformed requests: bodies that are not
 * what it takes (garbage bytes, JSON of the wrong shape, numbers out of range, deep nesting), the wrong content
 * types, methods it does not take, path variables of the wrong form. Each is answered 4xx as RFC 9457 problem
 * JSON, never 5xx, an HTML page or a stack trace, and none of them stores, deletes or leases anything: the
 * blocks stored before are all still there, whole, afterwards. The endpoints come from the running service, so
 * one added later is covered without being listed here.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.tiers.dram.capacity=2MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.capacity=4MB",
            "kvstore.tiers.nvme.file-size=1MB",
            "kvstore.tiers.nvme.slab-size=256KB",
            "kvstore.tokens[0].tenant=ops",
            "kvstore.tokens[0].token=ops-token-0123456789abcdef",
            "kvstore.tokens[0].write=*",
            "kvstore.tokens[0].one-sided=true",
            "kvstore.tokens[0].admin=true"
        })
class MalformedRequestsTest {

    static final Path DATA_DIR = TempDirs.create("kvstore-malformed-test");
    static final String[] OPS = {"Authorization", "Bearer ops-token-0123456789abcdef"};
    static final String NS = "m-kept";

    /** Bodies no endpoint takes as they are. */
    static final List<String> BODIES = List.of(
            "",
            "{}",
            "[]",
            "null",
            "\"a string\"",
            "12345678901234567890",
            "\u00ff\u00fe not JSON at all",
            "{\"blockHashes\":[\"zz\"],\"tokenIds\":[1.5]}",
            "{\"namespace\":\"" + NS + "\",\"tokenIds\":[-1,99999999999]}",
            "{\"blocks\":-5,\"count\":1e400,\"policy\":{\"x\":[]}}",
            "{\"a\":".repeat(2000),
            "{\"namespace\":\"" + NS + "\",\"blockHashes\":[\"" + "0".repeat(600) + "\"]}");

    static final List<String> CONTENT_TYPES =
            List.of("application/json", "application/octet-stream", "text/plain", "application/x-www-form-urlencoded");

    @DynamicPropertySource
    static void dataDir(DynamicPropertyRegistry registry) {
        registry.add("kvstore.data-dir", DATA_DIR::toString);
    }

    @LocalServerPort
    int port;

    @Autowired
    ApplicationContext context;

    @Autowired
    TierEngine engine;

    @Test
    void malformedRequestsToEveryEndpointAreProblemJsonAndChangeNothing() throws Exception {
        var http = new Http(port);
        assertThat(http.json("PUT", "/v1/namespaces/" + NS, TestLayout.declaration("m"), OPS)
                        .statusCode())
                .isEqualTo(201);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(3, 7));
        byte[] frames = Http.frames(hashes, TestLayout.blocks(3, 7), null);
        var stored = http.putBytes("/v1/namespaces/" + NS + "/blocks", "application/octet-stream", frames, OPS);
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        int leases = engine.activeLeases();

        Set<String> targets = new LinkedHashSet<>();
        for (Map<String, String> values : List.of(
                Map.of("ns", "m-other", "hash", "zz", "id", "no-such-id"),
                Map.of("ns", "..", "hash", "-1", "id", "%25"),
                Map.of("ns", "x".repeat(300), "hash", "0".repeat(600), "id", "99999999999999999999"))) {
            for (String[] e : RegisteredEndpoints.of(context, values)) {
                targets.add(e[1]);
            }
        }
        int sent = 0;
        Map<Integer, Integer> statuses = new java.util.TreeMap<>();
        List<String> wrong = new ArrayList<>();
        for (String path : targets) {
            for (String method : List.of("GET", "PUT", "POST", "DELETE", "PATCH")) {
                for (String type : CONTENT_TYPES) {
                    for (String body : BODIES) {
                        HttpResponse<String> r = http.send(method, path, type, body, OPS);
                        sent++;
                        statuses.merge(r.statusCode(), 1, Integer::sum);
                        String problem = whatIsWrong(method, r);
                        if (problem != null) {
                            wrong.add(method + " " + path + " (" + type + ", " + abbreviated(body) + "): " + problem);
                        }
                    }
                }
            }
        }
        System.out.printf(
                "%d malformed requests to %d paths, answered by status: %s%n", sent, targets.size(), statuses);
        assertThat(wrong).as("of %d malformed requests", sent).isEmpty();

        // nothing was stored, deleted or leased by any of them: the blocks come back whole
        assertThat(engine.activeLeases()).isEqualTo(leases);
        String fetch = "{\"blockHashes\":["
                + String.join(
                        ",", hashes.stream().map(h -> "\"" + h.hex() + "\"").toList()) + "]}";
        var back = http.json("POST", "/v1/namespaces/" + NS + "/blocks:fetch", fetch, OPS);
        assertThat(back.statusCode()).as(back.body()).isEqualTo(200);
        var list = http.get("/v1/namespaces/" + NS + "/blocks", OPS);
        assertThat(list.statusCode()).isEqualTo(200);
        for (BlockHash h : hashes) {
            assertThat(list.body()).contains(h.hex());
        }
        assertThat(http.get("/v1/namespaces", OPS).body()).doesNotContain("m-other");
    }

    /**
     * What is wrong with an answer to a malformed request, or null: it must be 4xx problem JSON, or 2xx to a GET
     * (which reads nothing from a body).
     */
    private static String whatIsWrong(String method, HttpResponse<String> r) {
        int status = r.statusCode();
        if (status < 300 && !method.equals("GET")) {
            return status + ": accepted";
        }
        String type = r.headers().firstValue("Content-Type").orElse("");
        String body = r.body();
        if (status >= 500) {
            return status + " " + abbreviated(body);
        }
        if (body.contains("Exception")
                || body.contains("\tat ")
                || body.toLowerCase().contains("<html")) {
            return "a stack trace or an HTML page: " + abbreviated(body);
        }
        if (status >= 400 && !type.startsWith("application/problem+json")) {
            return status + " as " + type + ", not problem JSON";
        }
        if (status >= 400 && !body.contains("\"status\":" + status)) {
            return status + " whose problem JSON names another status: " + abbreviated(body);
        }
        return null;
    }

    private static String abbreviated(String s) {
        return s.length() <= 80 ? s : s.substring(0, 80) + "...";
    }
}
