package io.kvstore.service.cluster;

import static io.kvstore.service.cluster.ClusterNodes.ADMIN_TOKEN;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvstore.block.BlockHash;
import io.kvstore.service.RegisteredEndpoints;
import io.kvstore.service.cluster.ClusterNodes.Node;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.PeerCredentials;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Tenants across a cluster (two nodes in this JVM, real HTTP, real etcd): a node forwards the caller it
 * authenticated to its peers signed with the cluster secret, and the peer enforces that caller's tenant
 * rules. Only node a knows alpha's and beta's tokens: alpha's blocks stored and fetched through a come
 * from b too; beta cannot fetch them through a; b refuses a forwarded caller without a valid signature,
 * and a validly signed beta is refused by b's own tenant check; a call signed for a is refused by b. Every
 * endpoint of a cluster node, including {@code blocks:probe} and {@code /admin/cluster}, refuses a request
 * without a token.
 */
class ClusterTenantTest {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String NS = "a-prompts";
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final String[] BETA = {"Authorization", "Bearer beta-token-0123456789"};
    static final String[] ADMIN = {"Authorization", "Bearer " + ADMIN_TOKEN};
    static final Caller ALPHA_CALLER = new Caller("alpha", "config-0", List.of(), List.of("a-*"), false, false);
    static final Caller BETA_CALLER = new Caller("beta", "config-1", List.of(), List.of("*"), false, false);

    @TempDir
    static Path dir;

    static EtcdServer etcd;
    static Node a;
    static Node b;
    static final List<BlockHash> prompt = ClusterNodes.chain(64, 41);

    @BeforeAll
    static void startCluster() throws Exception {
        etcd = new EtcdServer(dir).start();
        a = ClusterNodes.start(
                etcd.endpoint(),
                "a",
                dir,
                "/tt/",
                "--kvstore.tokens[0].tenant=alpha",
                "--kvstore.tokens[0].token=alpha-token-0123456789",
                "--kvstore.tokens[0].write=a-*",
                "--kvstore.tokens[1].tenant=beta",
                "--kvstore.tokens[1].token=beta-token-0123456789",
                "--kvstore.tokens[1].write=*");
        // b serves another tenant only: it knows neither alpha's nor beta's token
        b = ClusterNodes.start(
                etcd.endpoint(),
                "b",
                dir,
                "/tt/",
                "--kvstore.tokens[0].tenant=other",
                "--kvstore.tokens[0].token=other-token-0123456789",
                "--kvstore.tokens[0].write=o-*");
        await().atMost(Duration.ofSeconds(60))
                .ignoreExceptions()
                .until(() -> members(a).size() == 2 && members(b).size() == 2);
        var declared = ClusterNodes.send(a.base(), "PUT", "/v1/namespaces/" + NS, ClusterNodes.DECLARATION, ALPHA);
        assertThat(declared.statusCode()).as(declared.body()).isEqualTo(201);
        var stored = ClusterNodes.store(a.base(), NS, ClusterNodes.frames(prompt, 0, prompt.size()), ALPHA);
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
    }

    @AfterAll
    static void stopCluster() throws Exception {
        if (b != null) {
            b.close();
        }
        if (a != null) {
            a.close();
        }
        if (etcd != null) {
            etcd.close();
        }
    }

    static List<String> members(Node node) throws Exception {
        var r = ClusterNodes.send(node.base(), "GET", "/admin/cluster", null, ADMIN);
        List<String> names = new ArrayList<>();
        JSON.readTree(r.body())
                .path("members")
                .forEach(m -> names.add(m.path("name").asString()));
        return names;
    }

    @Test
    void aTenantsBlocksComeFromEveryNodeForItAndForNoOtherTenant() throws Exception {
        var lookup =
                ClusterNodes.send(a.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson(NS, prompt, false), ALPHA);
        assertThat(lookup.statusCode()).as(lookup.body()).isEqualTo(200);
        JsonNode found = JSON.readTree(lookup.body());
        assertThat(found.path("matchedBlocks").asInt()).isEqualTo(64);
        Set<String> holders = new HashSet<>();
        found.path("nodes").forEach(n -> holders.add(n.asString()));
        assertThat(holders).as("runs on both nodes").containsExactlyInAnyOrder("a", "b");

        // b answered a's probes and fetches for alpha, though b has no token of alpha's
        var fetched = ClusterNodes.fetch(a.base(), NS, prompt, ALPHA);
        assertThat(fetched.statusCode()).isEqualTo(200);
        ClusterTest.assertFrames(fetched.body(), prompt);

        // beta's token says write "*", but the namespace is alpha's, on every node
        var crossFetch = ClusterNodes.fetch(a.base(), NS, prompt, BETA);
        assertThat(crossFetch.statusCode()).isEqualTo(403);
        assertThat(new String(crossFetch.body())).contains("may not read namespace 'a-prompts'");
        var crossLookup =
                ClusterNodes.send(a.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson(NS, prompt, false), BETA);
        assertThat(crossLookup.statusCode()).isEqualTo(403);
        var crossStore = ClusterNodes.store(a.base(), NS, ClusterNodes.frames(prompt, 0, 1), BETA);
        assertThat(crossStore.statusCode()).isEqualTo(403);
        // b does not know alpha's token: tokens are checked where engines call, callers vouched for by peers
        assertThat(ClusterNodes.fetch(b.base(), NS, prompt.subList(0, 1), ALPHA).statusCode())
                .isEqualTo(403);
    }

    /** A fetch sent straight to b as a peer would send it, with the given caller and signing secret. */
    private static HttpResponse<String> forwardedFetch(Caller caller, String secret) throws Exception {
        String path = "/v1/namespaces/" + NS + "/blocks:fetch";
        byte[] body = ("{\"blockHashes\":" + ClusterNodes.hexList(prompt.subList(0, 8)) + "}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        var builder = HttpRequest.newBuilder(URI.create(b.base() + path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (secret != null) {
            // Kvstore-Forwarded-By among them
            new PeerCredentials(secret, "a", JSON, Clock.systemUTC())
                    .sign("b", b.boot(), "POST", path, caller, body)
                    .forEach(builder::header);
        } else {
            String encoded =
                    java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(JSON.writeValueAsBytes(caller));
            builder.header(Peer.FORWARDED, "a").header(PeerCredentials.CALLER, encoded);
        }
        return ClusterNodes.HTTP.send(builder.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aPeerAcceptsOnlySignedCallersAndStillAppliesTheirTenantRules() throws Exception {
        // which of the first 8 blocks b holds does not matter: the answer is decided before any block
        var unsigned = forwardedFetch(ALPHA_CALLER, null);
        assertThat(unsigned.statusCode()).as(unsigned.body()).isEqualTo(403);
        assertThat(unsigned.headers().firstValue("Content-Type"))
                .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
        var wrongSecret = forwardedFetch(ALPHA_CALLER, "not-the-cluster-secret-0123");
        assertThat(wrongSecret.statusCode()).as(wrongSecret.body()).isEqualTo(403);
        assertThat(wrongSecret.body()).contains("does not match");
        // signed with the real secret, beta is still not alpha: b's own tenant check refuses it
        var signedBeta = forwardedFetch(BETA_CALLER, ClusterNodes.SECRET);
        assertThat(signedBeta.statusCode()).as(signedBeta.body()).isEqualTo(403);
        assertThat(signedBeta.body()).contains("tenant 'beta' may not read namespace 'a-prompts'");
        // and the same request for alpha passes the check (a 200, or a 404 for a block b does not hold)
        assertThat(forwardedFetch(ALPHA_CALLER, ClusterNodes.SECRET).statusCode())
                .isIn(200, 404);
    }

    @Test
    void aProbeWhoseBodyWasChangedAfterTheSendingNodeSignedItIsRefused() throws Exception {
        OnThePath.Captured signed;
        try (OnThePath path = new OnThePath(b.boot())) {
            path.peer().sendProbe(ALPHA_CALLER, NS, prompt.subList(0, 1), false).answer();
            signed = path.last();
        }

        // another block asked, with a lease: refused before the probe servlet reads it
        PeerSignedBodyTest.assertBodyRefused(
                OnThePath.passOn(b.base(), signed, ProbeWire.request(prompt.subList(1, 2), true)));
        var unchanged = OnThePath.passOn(b.base(), signed, signed.body());
        assertThat(unchanged.statusCode()).as(new String(unchanged.body())).isEqualTo(200);
        assertThat(unchanged.body()).hasSize(1);
    }

    @Test
    void aCallSignedForOneNodeIsRefusedByAnotherSharingTheSecret() throws Exception {
        List<BlockHash> fresh = ClusterNodes.chain(1, 4242);
        // a store node b sends to node a, captured on its way to a
        OnThePath.Captured signed =
                OnThePath.capturedStore("a", a.boot(), ALPHA_CALLER, NS, ClusterNodes.frames(fresh, 0, 1));

        // replayed to node b, which shares the secret but was never addressed: refused before it stores
        var replayed = OnThePath.passOn(b.base(), signed, signed.body());
        String detail = new String(replayed.body());
        assertThat(replayed.statusCode()).as(detail).isEqualTo(403);
        assertThat(replayed.headers().firstValue("Content-Type").orElse("")).startsWith("application/problem+json");
        assertThat(JSON.readTree(detail).path("detail").asString())
                .contains("signed for node 'a'")
                .contains("this is node 'b'");

        // a call without the signed target, as nodes of older releases send it: refused, saying to upgrade
        Map<String, String> older = new java.util.LinkedHashMap<>(signed.headers());
        older.keySet().removeIf(PeerCredentials.TARGET::equalsIgnoreCase);
        var untargeted = OnThePath.passOn(
                a.base(), new OnThePath.Captured(signed.method(), signed.path(), older, signed.body()), signed.body());
        assertThat(untargeted.statusCode()).as(new String(untargeted.body())).isEqualTo(403);
        assertThat(JSON.readTree(untargeted.body()).path("detail").asString()).contains("upgrade every node");

        // the same call at the node it was signed for is taken
        var addressed = OnThePath.passOn(a.base(), signed, signed.body());
        assertThat(addressed.statusCode()).as(new String(addressed.body())).isEqualTo(200);
    }

    @Test
    void aCallReplayedToTheNodeItWasSignedForIsRefused() throws Exception {
        List<BlockHash> fresh = ClusterNodes.chain(1, 4444);
        // a store node a sends to node b, captured on its way to b
        OnThePath.Captured signed =
                OnThePath.capturedStore("b", b.boot(), ALPHA_CALLER, NS, ClusterNodes.frames(fresh, 0, 1));
        var delivered = OnThePath.passOn(b.base(), signed, signed.body());
        assertThat(delivered.statusCode()).as(new String(delivered.body())).isEqualTo(200);

        // the same call, body and all, sent again to b within the signature's window: refused, nothing stored
        var replayed = OnThePath.passOn(b.base(), signed, signed.body());
        String detail = new String(replayed.body());
        assertThat(replayed.statusCode()).as(detail).isEqualTo(409);
        assertThat(replayed.headers().firstValue("Content-Type").orElse("")).startsWith("application/problem+json");
        assertThat(JSON.readTree(detail).path("detail").asString())
                .contains("already accepted")
                .contains("replayed");

        // a call signed anew (another nonce) for the same store is taken: only the repeat is refused
        OnThePath.Captured again =
                OnThePath.capturedStore("b", b.boot(), ALPHA_CALLER, NS, ClusterNodes.frames(fresh, 0, 1));
        assertThat(header(again, PeerCredentials.NONCE)).isNotEqualTo(header(signed, PeerCredentials.NONCE));
        var resigned = OnThePath.passOn(b.base(), again, again.body());
        assertThat(resigned.statusCode()).as(new String(resigned.body())).isEqualTo(200);
    }

    private static String header(OnThePath.Captured request, String name) {
        return request.headers().entrySet().stream()
                .filter(e -> e.getKey().equalsIgnoreCase(name))
                .map(Map.Entry::getValue)
                .findFirst()
                .orElseThrow(() -> new AssertionError("no " + name + " header on " + request.headers()));
    }

    @Test
    void aSignedCallStrippedOfItsForwardedByHeaderIsNotRoutedOnToOtherNodes() throws Exception {
        List<BlockHash> fresh = ClusterNodes.chain(1, 4343);
        // a store node a sends to node b, captured on its way to b
        OnThePath.Captured signed =
                OnThePath.capturedStore("b", b.boot(), ALPHA_CALLER, NS, ClusterNodes.frames(fresh, 0, 1));

        // without the header b would take it for an engine's call and route it to the block's owners, signing
        // for each of them anew: the replay to other nodes the signed target prevents
        Map<String, String> stripped = new java.util.LinkedHashMap<>(signed.headers());
        stripped.keySet().removeIf(Peer.FORWARDED::equalsIgnoreCase);
        var routed = OnThePath.passOn(
                b.base(),
                new OnThePath.Captured(signed.method(), signed.path(), stripped, signed.body()),
                signed.body());
        assertThat(routed.statusCode()).as(new String(routed.body())).isEqualTo(403);
        assertThat(JSON.readTree(routed.body()).path("detail").asString()).contains(Peer.FORWARDED);

        // nor does another forwarding node's name pass: the header is signed
        Map<String, String> forged = new java.util.LinkedHashMap<>(stripped);
        forged.put(Peer.FORWARDED, "c");
        var renamed = OnThePath.passOn(
                b.base(), new OnThePath.Captured(signed.method(), signed.path(), forged, signed.body()), signed.body());
        assertThat(renamed.statusCode()).as(new String(renamed.body())).isEqualTo(403);
        assertThat(JSON.readTree(renamed.body()).path("detail").asString()).contains("does not match");

        var lookup =
                ClusterNodes.send(a.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson(NS, fresh, false), ALPHA);
        assertThat(lookup.statusCode()).as(lookup.body()).isEqualTo(200);
        assertThat(JSON.readTree(lookup.body()).path("matchedBlocks").asInt())
                .as("stored nowhere")
                .isZero();
    }

    @Test
    void everyEndpointOfAClusterNodeRefusesARequestWithoutAToken() throws Exception {
        String hash = prompt.getFirst().hex();
        List<String[]> all = RegisteredEndpoints.of(a.context(), Map.of("ns", NS, "hash", hash, "id", "some-id"));
        assertThat(all.stream().map(e -> e[1])).contains("/admin/cluster");
        for (String[] e : all) {
            var r = ClusterNodes.HTTP.send(request(a, e).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(e[0] + " " + e[1] + ": " + r.body()).isEqualTo(401);
            // a tenant's token is no admin token, on cluster admin endpoints too
            if (e[1].startsWith("/admin")) {
                var alpha = ClusterNodes.HTTP.send(
                        request(a, e).headers(ALPHA).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(alpha.statusCode()).as(e[0] + " " + e[1]).isEqualTo(403);
            }
        }
        // the probe nodes send each other is a servlet beside those mappings, with the same rules: no token
        // is 401, beta cannot probe alpha's namespace (403), alpha can; refusals are problem JSON
        byte[] asked = ProbeWire.request(List.of(prompt.getFirst()), false);
        var anonymous = probe(a, "/v1/cluster/" + NS + "/blocks:probe", asked, new String[0]);
        assertThat(anonymous.statusCode()).as(anonymous.body()).isEqualTo(401);
        assertProblem(anonymous, 401);
        var beta = probe(a, "/v1/cluster/" + NS + "/blocks:probe", asked, BETA);
        assertThat(beta.statusCode()).as(beta.body()).isEqualTo(403);
        assertProblem(beta, 403);
        var alpha = ClusterNodes.HTTP.send(
                probeRequest(a, "/v1/cluster/" + NS + "/blocks:probe", asked, ALPHA),
                HttpResponse.BodyHandlers.ofByteArray());
        assertThat(alpha.statusCode()).isEqualTo(200);
        assertThat(alpha.body()).hasSize(1); // one tier byte for the one hash asked, no lease
        // a body that is no probe, a path that is no probe, a GET: problem JSON, never a 5xx
        assertProblem(probe(a, "/v1/cluster/" + NS + "/blocks:probe", new byte[] {7, 1, 2}, ALPHA), 400);
        assertProblem(probe(a, "/v1/cluster/" + NS + "/blocks:other", asked, ALPHA), 404);
        var get = ClusterNodes.HTTP.send(
                HttpRequest.newBuilder(URI.create(a.base() + "/v1/cluster/" + NS + "/blocks:probe"))
                        .headers(ALPHA)
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertProblem(get, 405);
        // the admin role reaches every member through the signed caller: b shows its tiers to a
        var cluster = JSON.readTree(ClusterNodes.send(a.base(), "GET", "/admin/cluster", null, ADMIN)
                .body());
        for (JsonNode m : cluster.path("members")) {
            assertThat(m.path("error").isNull() || m.path("error").isMissingNode())
                    .as(m.toString())
                    .isTrue();
            assertThat(m.path("tiers").isArray()).as(m.toString()).isTrue();
        }
    }

    private static HttpRequest probeRequest(Node node, String path, byte[] body, String... headers) {
        var builder = HttpRequest.newBuilder(URI.create(node.base() + path))
                .header("Content-Type", "application/octet-stream")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (headers.length > 0) {
            builder.headers(headers);
        }
        return builder.build();
    }

    private static HttpResponse<String> probe(Node node, String path, byte[] body, String... headers) throws Exception {
        return ClusterNodes.HTTP.send(probeRequest(node, path, body, headers), HttpResponse.BodyHandlers.ofString());
    }

    private static void assertProblem(HttpResponse<String> response, int status) {
        assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
        assertThat(response.headers().firstValue("Content-Type").orElse("")).startsWith("application/problem+json");
        JsonNode problem = JSON.readTree(response.body());
        assertThat(problem.path("status").asInt()).isEqualTo(status);
        assertThat(problem.path("detail").asString()).isNotBlank();
    }

    private static HttpRequest.Builder request(Node node, String[] e) {
        var builder = HttpRequest.newBuilder(URI.create(node.base() + e[1]))
                .method(
                        e[0],
                        e[3] == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(e[3]));
        if (e[2] != null) {
            builder.header("Content-Type", e[2]);
        }
        return builder;
    }
}
