package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.service.ControlSocketTest.Connection;
import io.kvstore.service.local.ControlFrames;
import io.kvstore.service.local.ControlFrames.Reader;
import io.kvstore.service.local.ControlFrames.Writer;
import io.kvstore.service.quota.TenantAdmission;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * One tenant with as many requests running as it may ({@code kvstore.limits.max-concurrent-requests-per-tenant},
 * here 2; beta's own {@code concurrent-requests}, 1) over real HTTP and the local control socket: its next
 * lookup, reserve or lease waits in its own line and is answered 429 problem JSON naming the limit once the
 * admission wait passed, or runs as soon as a place is free; another tenant is served at once meanwhile; and
 * what streams bytes (a store) or gives something back (a release, a cancel) never waits. The running requests
 * are stood in for by places taken from the service's own {@link TenantAdmission}, the count requests share.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.local.enabled=true",
            "kvstore.tiers.dram.capacity=8MB",
            "kvstore.tiers.dram.slab-size=1MB",
            "kvstore.tiers.nvme.enabled=false",
            "kvstore.tokens[0].tenant=alpha",
            "kvstore.tokens[0].token=alpha-token-0123456789",
            "kvstore.tokens[0].write=a-*",
            "kvstore.tokens[0].one-sided=true",
            "kvstore.tokens[1].tenant=beta",
            "kvstore.tokens[1].token=beta-token-0123456789",
            "kvstore.tokens[1].write=b-*",
            "kvstore.tokens[1].one-sided=true",
            "kvstore.limits.max-concurrent-requests-per-tenant=2",
            "kvstore.tenants.beta.concurrent-requests=1",
            "kvstore.limits.admission-wait=2s"
        })
class TenantAdmissionTest {

    static final String ALPHA = "alpha-token-0123456789";
    static final String BETA = "beta-token-0123456789";
    static final String[] ALPHA_HEADER = {"Authorization", "Bearer " + ALPHA};
    static final String[] BETA_HEADER = {"Authorization", "Bearer " + BETA};

    @LocalServerPort
    int port;

    @Autowired
    TenantAdmission admission;

    private final List<TenantAdmission.Permit> held = new ArrayList<>();

    @AfterEach
    void giveBack() {
        held.forEach(TenantAdmission.Permit::close);
        held.clear();
    }

    private Http http() {
        return new Http(port);
    }

    /** Takes {@code n} of the tenant's places, as that many of its requests running would. */
    private void occupy(String tenant, int n) {
        for (int i = 0; i < n; i++) {
            held.add(admission.enter(tenant));
        }
    }

    private void declare(String ns, String[] header) throws Exception {
        var r = http().json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("m"), header);
        assertThat(r.statusCode()).as(r.body()).isIn(200, 201);
    }

    private HttpResponse<String> lookup(String ns, String[] header) throws Exception {
        String hashes = Http.hexList(TestLayout.hashes(TestLayout.tokens(2, 7)));
        return http().json(
                        "POST", "/v1/lookup", "{\"namespace\":\"" + ns + "\",\"blockHashes\":" + hashes + "}", header);
    }

    private Connection hello(String token) throws Exception {
        var view = http().get("/v1/local", ALPHA_HEADER);
        assertThat(view.statusCode()).as(view.body()).isEqualTo(200);
        Connection c = new Connection(Path.of(TenantApiTest.field(view.body(), "controlSocket")));
        assertThat(c.call(new Writer(ControlFrames.HELLO).str(token)).kind()).isEqualTo(ControlFrames.OK);
        return c;
    }

    private static Writer reserve(String ns, BlockHash hash) {
        return new Writer(ControlFrames.RESERVE)
                .str(ns)
                .i64(-1)
                .u32(1)
                .hash(hash.hex())
                .hash(null);
    }

    /** An error frame's status and detail. */
    private static String[] problem(Reader r) {
        assertThat(r.kind()).as("an error frame").isEqualTo(ControlFrames.ERROR);
        int status = r.u16();
        r.str(); // title
        return new String[] {String.valueOf(status), r.str()};
    }

    @Test
    void aTenantAtItsLimitWaitsThen429sWhileAnotherTenantIsServedAndStoresAndReleasesNeverWait() throws Exception {
        declare("a-ns", ALPHA_HEADER);
        declare("b-ns", BETA_HEADER);
        occupy("alpha", 2);

        // beta has places of its own: served at once, over HTTP and over the socket
        var beta = lookup("b-ns", BETA_HEADER);
        assertThat(beta.statusCode()).as(beta.body()).isEqualTo(200);
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 31)).getFirst();
        try (Connection b = hello(BETA)) {
            Reader granted = b.call(reserve("b-ns", hash));
            assertThat(granted.kind()).isEqualTo(ControlFrames.OK);
            granted.str(); // region id
            assertThat(b.call(new Writer(ControlFrames.CANCEL).str(granted.str()))
                            .kind())
                    .isEqualTo(ControlFrames.OK);
        }

        // alpha's lookup waits its admission wait, then 429 problem JSON naming the limit
        long start = System.nanoTime();
        var refused = lookup("a-ns", ALPHA_HEADER);
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Content-Type"))
                .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
        assertThat(refused.body())
                .contains("tenant 'alpha'", "2 requests running", "max-concurrent-requests-per-tenant");
        assertThat(waitedMs).isGreaterThanOrEqualTo(1_900);

        // a store streams bytes and takes no place; releasing a lease never waits either
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(2, 41));
        var stored = http().putBytes(
                        "/v1/namespaces/a-ns/blocks",
                        "application/octet-stream",
                        Http.frames(hashes, TestLayout.blocks(2, 41), null),
                        ALPHA_HEADER);
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        var release = http().send("DELETE", "/v1/leases/no-such-lease", null, null, ALPHA_HEADER);
        assertThat(release.statusCode()).as(release.body()).isEqualTo(404);

        // the socket's reserve is held to the same limit; its cancel is not
        try (Connection a = hello(ALPHA)) {
            String[] p = problem(a.call(reserve("a-ns", hash)));
            assertThat(p[0]).isEqualTo("429");
            assertThat(p[1]).contains("tenant 'alpha'", "max-concurrent-requests-per-tenant");
            assertThat(problem(a.call(new Writer(ControlFrames.CANCEL).str("no-such-reservation")))[0])
                    .isNotEqualTo("429");
        }

        // beta's own limit is 1 (kvstore.tenants.beta.concurrent-requests)
        occupy("beta", 1);
        var betaFull = lookup("b-ns", BETA_HEADER);
        assertThat(betaFull.statusCode()).as(betaFull.body()).isEqualTo(429);
        assertThat(betaFull.body()).contains("tenant 'beta'", "1 requests running");
    }

    @Test
    void aWaitingRequestRunsAsSoonAsItsTenantHasAPlaceAgain() throws Exception {
        declare("a-wait", ALPHA_HEADER);
        occupy("alpha", 2);
        CompletableFuture<HttpResponse<String>> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return lookup("a-wait", ALPHA_HEADER);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(300);
        assertThat(waiting).isNotDone();
        held.removeFirst().close(); // one of alpha's running requests ends
        var answered = waiting.get(10, TimeUnit.SECONDS);
        assertThat(answered.statusCode()).as(answered.body()).isEqualTo(200);
    }
}
