package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.service.quota.FairLookups;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Tenants and tokens on the engine API over real HTTP: every endpoint refuses a request without a token
 * (401) or with an unknown one (403), one tenant cannot reach another's namespace through any endpoint
 * even with a token whose patterns cover it, a read-only token cannot write, the one-sided data plane
 * needs its own grant, and tokens issued through the admin API work at once, survive as digests only,
 * and stop working when revoked.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.admin-token=secret",
            "kvstore.tiers.dram.capacity=2MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.capacity=4MB",
            "kvstore.tiers.nvme.file-size=1MB",
            "kvstore.tiers.nvme.slab-size=256KB",
            "kvstore.tokens[0].tenant=alpha",
            "kvstore.tokens[0].token=alpha-token-0123456789",
            "kvstore.tokens[0].write=a-*",
            "kvstore.tokens[0].one-sided=true",
            "kvstore.tokens[1].tenant=beta",
            "kvstore.tokens[1].token=beta-token-0123456789",
            "kvstore.tokens[1].write=*",
            "kvstore.tokens[1].one-sided=true",
            "kvstore.tokens[2].tenant=alpha",
            "kvstore.tokens[2].token=alpha-reader-0123456789",
            "kvstore.tokens[2].read=a-*",
            "kvstore.tokens[3].tenant=ops",
            "kvstore.tokens[3].token=ops-admin-token-0123456789",
            "kvstore.tokens[3].admin=true"
        })
class TenantApiTest {

    static final Path DATA_DIR = TempDirs.create("kvstore-tenant-test");

    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final String[] BETA = {"Authorization", "Bearer beta-token-0123456789"};
    static final String[] ALPHA_READER = {"Authorization", "Bearer alpha-reader-0123456789"};
    static final String[] WRONG = {"Authorization", "Bearer not-a-token-at-all"};
    /** {@code kvstore.admin-token}, kept working as a token with the admin role only. */
    static final String[] ADMIN = {"Authorization", "Bearer secret"};
    /** A {@code kvstore.tokens} entry with {@code admin: true}. */
    static final String[] OPS = {"Authorization", "Bearer ops-admin-token-0123456789"};

    @DynamicPropertySource
    static void dataDir(DynamicPropertyRegistry registry) {
        registry.add("kvstore.data-dir", DATA_DIR::toString);
    }

    @LocalServerPort
    int port;

    @Autowired
    ApplicationContext context;

    /** Every admin endpoint, as method, path, content type and body. */
    private static final List<String[]> ADMIN_ENDPOINTS = List.of(
            new String[] {"GET", "/admin/tiers", null, null},
            new String[] {"GET", "/admin/eviction-policy", null, null},
            new String[] {"PUT", "/admin/eviction-policy", "application/json", "{}"},
            new String[] {"POST", "/admin/evict", "application/json", "{\"tier\":\"DRAM\",\"blocks\":1}"},
            new String[] {"POST", "/admin/pin", "application/json", "{}"},
            new String[] {"POST", "/admin/unpin", "application/json", "{}"},
            new String[] {"GET", "/admin/backends", null, null},
            new String[] {"GET", "/admin/tokens", null, null},
            new String[] {"POST", "/admin/tokens", "application/json", "{\"tenant\":\"x\",\"read\":[\"x\"]}"},
            new String[] {"DELETE", "/admin/tokens/tok-000000000000", null, null},
            new String[] {"GET", "/admin/tenants", null, null});

    /** Every engine endpoint, as method, path, content type and body, for namespace {@code ns}. */
    private static List<String[]> endpoints(String ns, String hash) {
        String block = "{\"blockHashes\":[\"" + hash + "\"]}";
        return List.of(
                new String[] {"PUT", "/v1/namespaces/" + ns, "application/json", TestLayout.declaration("m")},
                new String[] {"GET", "/v1/namespaces/" + ns, null, null},
                new String[] {"DELETE", "/v1/namespaces/" + ns, null, null},
                new String[] {
                    "POST", "/v1/lookup", "application/json", "{\"namespace\":\"" + ns + "\",\"blockHashes\":[]}"
                },
                new String[] {"PUT", "/v1/namespaces/" + ns + "/blocks", "application/octet-stream", ""},
                new String[] {"POST", "/v1/namespaces/" + ns + "/blocks:fetch", "application/json", block},
                new String[] {"DELETE", "/v1/namespaces/" + ns + "/blocks/" + hash, null, null},
                new String[] {
                    "POST",
                    "/v1/namespaces/" + ns + "/blocks:reserve",
                    "application/json",
                    "{\"blocks\":[{\"hash\":\"" + hash + "\"}]}"
                },
                new String[] {
                    "POST", "/v1/namespaces/" + ns + "/blocks:commit", "application/json", "{\"reservationId\":\"x\"}"
                },
                new String[] {
                    "POST",
                    "/v1/local/namespaces/" + ns + "/blocks:reserve",
                    "application/json",
                    "{\"blocks\":[{\"hash\":\"" + hash + "\"}]}"
                },
                new String[] {
                    "POST",
                    "/v1/local/namespaces/" + ns + "/blocks:commit",
                    "application/json",
                    "{\"reservationId\":\"x\"}"
                },
                new String[] {"POST", "/v1/local/namespaces/" + ns + "/blocks:lease", "application/json", block},
                new String[] {"GET", "/v1/namespaces/" + ns + "/blocks", null, null});
    }

    private static final List<String[]> UNSCOPED = List.of(
            new String[] {"GET", "/v1/namespaces", null, null},
            new String[] {"GET", "/v1/transport", null, null},
            new String[] {"GET", "/v1/local", null, null},
            new String[] {"GET", "/v1/leases/some-id", null, null},
            new String[] {"DELETE", "/v1/leases/some-id", null, null},
            new String[] {"DELETE", "/v1/reservations/some-id", null, null});

    private HttpResponse<String> call(String[] e, String... headers) throws Exception {
        return new Http(port).send(e[0], e[1], e[2], e[3], headers);
    }

    private static void assertProblem(HttpResponse<String> r, int status, String[] e) {
        assertThat(r.statusCode()).as(e[0] + " " + e[1] + ": " + r.body()).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type"))
                .as(e[0] + " " + e[1])
                .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    }

    private List<BlockHash> storeAlpha(String ns) throws Exception {
        var http = new Http(port);
        assertThat(http.json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("m"), ALPHA)
                        .statusCode())
                .isEqualTo(201);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(2, 5));
        var body = Http.frames(hashes, TestLayout.blocks(2, 5), null);
        var put = http.putBytes("/v1/namespaces/" + ns + "/blocks", "application/octet-stream", body, ALPHA);
        assertThat(put.statusCode()).as(put.body()).isEqualTo(200);
        return hashes;
    }

    @Test
    void everyEndpointRefusesARequestWithoutOrWithAnUnknownToken() throws Exception {
        String hash = TestLayout.hashes(TestLayout.tokens(1, 1)).getFirst().hex();
        var all = new java.util.ArrayList<>(endpoints("a-open", hash));
        all.addAll(UNSCOPED);
        all.addAll(ADMIN_ENDPOINTS);
        // and whatever else is registered, so an endpoint added later cannot be missed here
        all.addAll(RegisteredEndpoints.of(context, Map.of("ns", "a-open", "hash", hash, "id", "some-id")));
        for (String[] e : all) {
            var none = call(e);
            assertProblem(none, 401, e);
            assertThat(none.headers().firstValue("WWW-Authenticate")).isPresent();
            assertProblem(call(e, WRONG), 403, e);
        }
    }

    @Test
    void theListsHereNameEveryRegisteredEndpoint() {
        String hash = TestLayout.hashes(TestLayout.tokens(1, 1)).getFirst().hex();
        Set<String> listed = new HashSet<>();
        for (var list : List.of(endpoints("a-open", hash), UNSCOPED, ADMIN_ENDPOINTS)) {
            list.forEach(e -> listed.add(e[0] + " " + e[1].replaceAll("/tok-[0-9a-f]+$", "/some-id")));
        }
        Set<String> registered = new HashSet<>();
        for (String[] e : RegisteredEndpoints.of(context, Map.of("ns", "a-open", "hash", hash, "id", "some-id"))) {
            registered.add(e[0] + " " + e[1]);
        }
        // a namespace endpoint missing from endpoints() would escape the cross-tenant test below
        assertThat(listed).containsAll(registered);
    }

    @Test
    void theAdminApiNeedsATokenWithTheAdminRole() throws Exception {
        for (String[] e : ADMIN_ENDPOINTS) {
            var none = call(e);
            assertProblem(none, 401, e);
            assertThat(none.headers().firstValue("WWW-Authenticate")).isPresent();
            assertProblem(call(e, WRONG), 403, e);
            var alpha = call(e, ALPHA);
            assertProblem(alpha, 403, e);
            assertThat(alpha.body()).contains("does not have the admin role");
        }
        // kvstore.tokens[n].admin and the older kvstore.admin-token both work
        assertThat(call(ADMIN_ENDPOINTS.getFirst(), OPS).statusCode()).isEqualTo(200);
        assertThat(call(ADMIN_ENDPOINTS.getFirst(), ADMIN).statusCode()).isEqualTo(200);
        // an admin token issued at run time works at once; a plain one issued beside it does not
        var http = new Http(port);
        var issued = http.json("POST", "/admin/tokens", "{\"tenant\":\"ops2\",\"admin\":true}", OPS);
        assertThat(issued.statusCode()).as(issued.body()).isEqualTo(201);
        String[] ops2 = {"Authorization", "Bearer " + field(issued.body(), "token")};
        assertThat(http.get("/admin/tenants", ops2).statusCode()).isEqualTo(200);
        var plain = http.json("POST", "/admin/tokens", "{\"tenant\":\"user\",\"read\":[\"u-*\"]}", ops2);
        String[] user = {"Authorization", "Bearer " + field(plain.body(), "token")};
        assertThat(http.get("/admin/tiers", user).statusCode()).isEqualTo(403);
        // the admin role grants no namespace: an admin-only token reads nothing on the engine API
        assertThat(http.get("/v1/namespaces/a-open", OPS).statusCode()).isEqualTo(403);
        assertThat(http.get("/admin/tokens", OPS).body()).contains("\"id\":\"admin-token\"", "\"admin\":true");
    }

    @Test
    void oneTenantCannotReachAnothersNamespaceThroughAnyEndpoint() throws Exception {
        List<BlockHash> hashes = storeAlpha("a-private");
        String hash = hashes.getFirst().hex();
        // beta's token says write "*", but the namespace belongs to alpha
        for (String[] e : endpoints("a-private", hash)) {
            assertProblem(call(e, BETA), 403, e);
        }
        var lookup = new Http(port)
                .json(
                        "POST",
                        "/v1/lookup",
                        "{\"namespace\":\"a-private\",\"blockHashes\":" + Http.hexList(hashes) + ",\"lease\":true}",
                        ALPHA);
        assertThat(lookup.body()).contains("\"matchedBlocks\":2");
        String lease = field(lookup.body(), "id");
        var leaseGet = new String[] {"GET", "/v1/leases/" + lease, null, null};
        var leaseDelete = new String[] {"DELETE", "/v1/leases/" + lease, null, null};
        assertProblem(call(leaseGet, BETA), 403, leaseGet);
        assertProblem(call(leaseDelete, BETA), 403, leaseDelete);
        assertThat(call(leaseGet, ALPHA).statusCode()).isEqualTo(200);
        assertThat(call(leaseDelete, ALPHA).statusCode()).isEqualTo(204);

        assertThat(call(UNSCOPED.getFirst(), BETA).body()).doesNotContain("a-private");
        assertThat(call(UNSCOPED.getFirst(), ALPHA).body()).contains("a-private", "\"tenant\":\"alpha\"");
        // and the blocks are untouched
        assertThat(new Http(port)
                        .json(
                                "POST",
                                "/v1/lookup",
                                "{\"namespace\":\"a-private\",\"blockHashes\":" + Http.hexList(hashes) + "}",
                                ALPHA)
                        .body())
                .contains("\"matchedBlocks\":2");
    }

    @Test
    void aTokenReachesOnlyTheNamespacesItNames() throws Exception {
        var http = new Http(port);
        var outside = http.json("PUT", "/v1/namespaces/b-mine", TestLayout.declaration("m"), ALPHA);
        assertThat(outside.statusCode()).isEqualTo(403);
        assertThat(outside.body()).contains("may not write namespace 'b-mine'");
    }

    @Test
    void aReadOnlyTokenReadsButCannotWrite() throws Exception {
        List<BlockHash> hashes = storeAlpha("a-shared");
        String hash = hashes.getFirst().hex();
        var http = new Http(port);
        assertThat(http.json(
                                "POST",
                                "/v1/lookup",
                                "{\"namespace\":\"a-shared\",\"blockHashes\":" + Http.hexList(hashes) + "}",
                                ALPHA_READER)
                        .body())
                .contains("\"matchedBlocks\":2");
        assertThat(call(endpoints("a-shared", hash).get(5), ALPHA_READER).statusCode())
                .isEqualTo(200);
        for (int i : new int[] {0, 2, 4, 6, 7, 8, 9, 10, 11}) {
            String[] e = endpoints("a-shared", hash).get(i);
            assertProblem(call(e, ALPHA_READER), 403, e);
        }
        // nor use the one-sided data plane, whose key opens all of DRAM
        assertProblem(call(UNSCOPED.get(1), ALPHA_READER), 403, UNSCOPED.get(1));
        assertThat(call(UNSCOPED.get(1), ALPHA).statusCode()).isEqualTo(200);
    }

    @Test
    void tokensIssuedAtRunTimeWorkAtOnceArePersistedAsDigestsAndCanBeRevoked() throws Exception {
        var http = new Http(port);
        var issued = http.json("POST", "/admin/tokens", "{\"tenant\":\"gamma\",\"write\":[\"g-*\"]}", ADMIN);
        assertThat(issued.statusCode()).as(issued.body()).isEqualTo(201);
        String token = field(issued.body(), "token");
        String id = field(issued.body(), "id");
        String[] gamma = {"Authorization", "Bearer " + token};
        assertThat(http.json("PUT", "/v1/namespaces/g-1", TestLayout.declaration("m"), gamma)
                        .statusCode())
                .isEqualTo(201);
        String stored = Files.readString(DATA_DIR.resolve("tokens.json"));
        assertThat(stored).contains(id, "gamma").doesNotContain(token);
        assertThat(http.get("/admin/tokens", ADMIN).body()).contains(id).doesNotContain(token);
        assertThat(http.get("/admin/tokens").statusCode()).isEqualTo(401);
        assertThat(http.send("DELETE", "/admin/tokens/" + id, null, null, ADMIN).statusCode())
                .isEqualTo(204);
        assertThat(http.get("/v1/namespaces/g-1", gamma).statusCode()).isEqualTo(403);
        assertThat(http.send("DELETE", "/admin/tokens/config-0", null, null, ADMIN)
                        .statusCode())
                .isEqualTo(409);
    }

    @Test
    void aLookupDoesItsWorkInATurnAndATenantWaitingForOneIsServedWhenATurnFrees() throws Exception {
        var fair = context.getBean(FairLookups.class);
        Assumptions.assumeTrue(fair.turns() > 0, "one carrier thread: no turns to take");
        var ns = "a-turns";
        var declared = new Http(port).json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("m"), ALPHA);
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        // every turn taken, as by lookups of another tenant at work
        var release = new CountDownLatch(1);
        var holding = new CountDownLatch(fair.turns());
        List<Thread> holders = new ArrayList<>();
        for (int i = 0; i < fair.turns(); i++) {
            holders.add(Thread.ofPlatform()
                    .start(() -> fair.run("beta", () -> {
                        holding.countDown();
                        try {
                            release.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        return null;
                    })));
        }
        assertThat(holding.await(10, TimeUnit.SECONDS)).isTrue();
        var lookup = CompletableFuture.supplyAsync(() -> {
            try {
                return new Http(port)
                        .json(
                                "POST",
                                "/v1/lookup",
                                "{\"namespace\":\"" + ns + "\",\"tokenIds\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}",
                                ALPHA)
                        .statusCode();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(500);
        assertThat(lookup).as("the lookup waits for a turn").isNotDone();
        release.countDown();
        assertThat(lookup.get(10, TimeUnit.SECONDS)).isEqualTo(200);
        for (Thread t : holders) {
            t.join(10_000);
        }
    }

    static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":\"([^\"]+)\"").matcher(json);
        assertThat(m.find()).as(name + " in " + json).isTrue();
        return m.group(1);
    }
}
