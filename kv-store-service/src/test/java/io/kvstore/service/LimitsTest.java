package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.ffm.ucx.Ucp;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Limits that keep one client from starving the rest, tried as a hostile client would over real
 * sockets: reservations that would take all of DRAM, uploads that trickle or stall, a 400 MB lookup,
 * too many token ids or hashes. Short deadlines here so the test is quick; the defaults are in
 * configs/README.md.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.tiers.dram.capacity=2MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.enabled=false",
            "kvstore.limits.frame-timeout=2s",
            "kvstore.limits.upload-deadline=30s",
            "kvstore.limits.max-lookup-tokens=4096",
            "kvstore.limits.max-blocks-per-request=200",
            "kvstore.limits.max-leased-blocks-per-tenant=10",
            "server.tomcat.connection-timeout=3s"
        })
class LimitsTest {

    @LocalServerPort
    int port;

    private Http http() {
        return new Http(port);
    }

    private void declare(String ns) throws Exception {
        var r = http().json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("m"));
        assertThat(r.statusCode()).as(r.body()).isIn(200, 201);
    }

    private static byte[] header(BlockHash hash, int length) throws Exception {
        var out = new ByteArrayOutputStream();
        var data = new DataOutputStream(out);
        data.writeByte(hash.length());
        data.write(hash.toBytes());
        data.writeByte(0);
        data.writeInt(length);
        return out.toByteArray();
    }

    /** Opens a store request on a raw socket with a declared length and sends {@code first} of its body. */
    private Socket openUpload(String ns, long contentLength, byte[] first) throws Exception {
        Socket s = new Socket("127.0.0.1", port);
        s.setSoTimeout(30_000);
        OutputStream out = s.getOutputStream();
        out.write(("PUT /v1/namespaces/" + ns + "/blocks HTTP/1.1\r\nHost: kvstore\r\n"
                        + "Content-Type: application/octet-stream\r\nContent-Length: " + contentLength + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.write(first);
        out.flush();
        return s;
    }

    private static String response(Socket s) throws Exception {
        InputStream in = s.getInputStream();
        var buf = new ByteArrayOutputStream();
        byte[] b = new byte[8192];
        int n;
        try {
            while ((n = in.read(b)) > 0) {
                buf.write(b, 0, n);
                String text = buf.toString(StandardCharsets.UTF_8);
                if (text.contains("\r\n\r\n") && (text.endsWith("}") || text.endsWith("\r\n0\r\n\r\n"))) {
                    break;
                }
            }
        } catch (java.net.SocketException reset) {
            // the server may close right after answering
        }
        return buf.toString(StandardCharsets.UTF_8);
    }

    private long dramUsed() throws Exception {
        var m = java.util.regex.Pattern.compile("\"DRAM\":\\{[^}]*\"usedBytes\":(\\d+)")
                .matcher(http().get("/actuator/health").body());
        assertThat(m.find()).isTrue();
        return Long.parseLong(m.group(1));
    }

    @Test
    void tricklingUploadsHoldNoSlotAndNormalStoresGoOn() throws Exception {
        declare("trickle");
        List<Socket> slow = new ArrayList<>();
        try {
            // more tricklers than DRAM has slots (2 MB / 16 KiB = 128), each past its header and a few bytes
            for (int i = 0; i < 140; i++) {
                BlockHash h = TestLayout.hashes(TestLayout.tokens(1, 1000 + i)).getFirst();
                byte[] head = header(h, TestLayout.BLOCK_BYTES);
                byte[] first = java.util.Arrays.copyOf(head, head.length + 100);
                slow.add(openUpload("trickle", head.length + TestLayout.BLOCK_BYTES, first));
            }
            Thread.sleep(500);
            List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(8, 3));
            long start = System.nanoTime();
            var r = http().putBytes(
                            "/v1/namespaces/trickle/blocks",
                            "application/octet-stream",
                            Http.frames(hashes, TestLayout.blocks(8, 3), null));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            // well short of the tricklers' 30 s upload deadline (what a store held behind them would wait for),
            // with room for a loaded machine
            assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(15_000);
        } finally {
            for (Socket s : slow) {
                s.close();
            }
        }
    }

    @Test
    void aBlockThatArrivesTooSlowlyIs408AndItsSlotIsReleased() throws Exception {
        // 128 KiB blocks: more than the 64 KiB staged before a slot is taken
        int blockBytes = 128 * 1024;
        var r = http().json(
                        "PUT",
                        "/v1/namespaces/slowblock",
                        TestLayout.declaration("m").replace("\"blockSize\":16", "\"blockSize\":128"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        long before = dramUsed();
        BlockHash h = TestLayout.hashes(TestLayout.tokens(1, 77)).getFirst();
        byte[] head = header(h, blockBytes);
        byte[] first = java.util.Arrays.copyOf(head, head.length + 70 * 1024);
        long start = System.nanoTime();
        try (Socket s = openUpload("slowblock", head.length + blockBytes, first)) {
            String answer = null;
            for (int i = 0; i < 80 && answer == null; i++) {
                try {
                    s.getOutputStream().write(0);
                    s.getOutputStream().flush();
                } catch (java.io.IOException closed) {
                    break;
                }
                Thread.sleep(250);
                if (s.getInputStream().available() > 0) {
                    answer = response(s);
                }
            }
            if (answer == null) {
                answer = response(s);
            }
            assertThat(answer).startsWith("HTTP/1.1 408");
            assertThat(answer)
                    .contains("application/problem+json", "frame-timeout")
                    .doesNotContain("timestamp");
        }
        assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(15_000);
        assertThat(dramUsed()).isEqualTo(before);
    }

    @Test
    void aStalledUploadGets408ProblemJson() throws Exception {
        declare("stalled");
        BlockHash h = TestLayout.hashes(TestLayout.tokens(1, 78)).getFirst();
        byte[] head = header(h, TestLayout.BLOCK_BYTES);
        try (Socket s = openUpload("stalled", head.length + TestLayout.BLOCK_BYTES, head)) {
            String answer = response(s);
            assertThat(answer).startsWith("HTTP/1.1 408");
            assertThat(answer).contains("application/problem+json").doesNotContain("timestamp");
        }
    }

    @Test
    void aHugeLookupIsRefusedAtOnceWith413() throws Exception {
        declare("huge");
        // 200M token ids: 400 MB of JSON, declared up front; refused before the body is read
        long length = 400_000_000L;
        long start = System.nanoTime();
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            s.getOutputStream()
                    .write(("POST /v1/lookup HTTP/1.1\r\nHost: kvstore\r\nContent-Type: application/json\r\n"
                                    + "Content-Length: " + length
                                    + "\r\n\r\n{\"namespace\":\"huge\",\"tokenIds\":[1,2,3")
                            .getBytes(StandardCharsets.US_ASCII));
            String answer = response(s);
            assertThat(answer).startsWith("HTTP/1.1 413");
            assertThat(answer).contains("application/problem+json", "kvstore.limits.max-json-body");
        }
        assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(5_000);
    }

    @Test
    void tooManyTokenIdsOrHashesNameTheLimit() throws Exception {
        declare("many");
        var tokens = http().json(
                        "POST",
                        "/v1/lookup",
                        "{\"namespace\":\"many\",\"tokenIds\":" + TestLayout.tokenJson(new int[5000]) + "}");
        assertThat(tokens.statusCode()).isEqualTo(400);
        assertThat(tokens.body()).contains("kvstore.limits.max-lookup-tokens", "\"field\":\"tokenIds\"");
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(201, 4));
        var fetch = http().fetch("many", "{\"blockHashes\":" + Http.hexList(hashes) + "}");
        assertThat(fetch.statusCode()).isEqualTo(400);
        assertThat(new String(fetch.body(), StandardCharsets.UTF_8)).contains("kvstore.limits.max-blocks-per-request");
    }

    @Test
    void oneTenantCannotReserveAllOfDram() throws Exception {
        Assumptions.assumeTrue(Ucp.isAvailable(), "libucp: " + Ucp.availability());
        declare("greedy");
        // the attack of issue #11: every slot reserved for an hour
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(128, 9));
        StringBuilder blocks = new StringBuilder("[");
        for (int i = 0; i < hashes.size(); i++) {
            blocks.append(i == 0 ? "" : ",")
                    .append("{\"hash\":\"")
                    .append(hashes.get(i).hex())
                    .append("\"}");
        }
        blocks.append(']');
        var hour = http().json(
                        "POST",
                        "/v1/namespaces/greedy/blocks:reserve",
                        "{\"blocks\":" + blocks + ",\"timeoutSeconds\":3600}");
        assertThat(hour.statusCode()).isEqualTo(400);
        assertThat(hour.body()).contains("kvstore.limits.max-reservation-timeout");
        var all = http().json("POST", "/v1/namespaces/greedy/blocks:reserve", "{\"blocks\":" + blocks + "}");
        assertThat(all.statusCode()).as(all.body()).isEqualTo(429);
        assertThat(all.body()).contains("kvstore.limits.reserved-fraction-per-tenant");
        // half of DRAM is allowed; the other half stays for everyone else
        String half = blocks.substring(
                        0, blocks.indexOf("{\"hash\":\"" + hashes.get(64).hex()) - 1) + "]";
        var ok = http().json("POST", "/v1/namespaces/greedy/blocks:reserve", "{\"blocks\":" + half + "}");
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        var more = http().json(
                        "POST",
                        "/v1/namespaces/greedy/blocks:reserve",
                        "{\"blocks\":[{\"hash\":\"" + hashes.get(100).hex() + "\"}]}");
        assertThat(more.statusCode()).isEqualTo(429);
        List<BlockHash> others = TestLayout.hashes(TestLayout.tokens(32, 10));
        assertThat(http().putBytes(
                                "/v1/namespaces/greedy/blocks",
                                "application/octet-stream",
                                Http.frames(others, TestLayout.blocks(32, 10), null))
                        .statusCode())
                .isEqualTo(200);
        String id = TenantApiTest.field(ok.body(), "reservationId");
        assertThat(http().send("DELETE", "/v1/reservations/" + id, null, null).statusCode())
                .isEqualTo(204);
        assertThat(http().json(
                                "POST",
                                "/v1/namespaces/greedy/blocks:reserve",
                                "{\"blocks\":[{\"hash\":\"" + hashes.get(100).hex() + "\"}]}")
                        .statusCode())
                .isEqualTo(200);
    }

    /**
     * Leases are memory the service keeps, and blocks no eviction can take, until they end: a tenant leasing
     * the same blocks over and over is refused 429 once it holds {@code max-leased-blocks-per-tenant} (10
     * here), nothing leased by the refused call, and leases again once it releases one.
     */
    @Test
    void aTenantLeasingWithoutEndIsRefusedAtItsLeaseLimitAndMayLeaseAgainAfterARelease() throws Exception {
        declare("leases");
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(4, 77));
        var stored = http().putBytes(
                        "/v1/namespaces/leases/blocks",
                        "application/octet-stream",
                        Http.frames(hashes, TestLayout.blocks(4, 77), null));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        String leased = "{\"namespace\":\"leases\",\"blockHashes\":" + Http.hexList(hashes) + ",\"lease\":true}";
        var first = http().json("POST", "/v1/lookup", leased);
        assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
        var second = http().json("POST", "/v1/lookup", leased);
        assertThat(second.statusCode()).as(second.body()).isEqualTo(200);
        var third = http().json("POST", "/v1/lookup", leased);
        assertThat(third.statusCode()).as(third.body()).isEqualTo(429);
        assertThat(third.body()).contains("max-leased-blocks-per-tenant", "holds 8 leased blocks");
        assertThat(third.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/problem+json");

        String id = tools.jackson.databind.json.JsonMapper.builder()
                .build()
                .readTree(first.body())
                .path("lease")
                .path("id")
                .asString();
        assertThat(http().json("DELETE", "/v1/leases/" + id, null).statusCode()).isIn(200, 204);
        assertThat(http().json("POST", "/v1/lookup", leased).statusCode()).isEqualTo(200);
    }
}
