package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockHash;
import io.kvstore.block.TierId;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.PeerCredentials;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * The lean node-to-node client against a real loopback server that answers as scripted: keep-alive reuse,
 * a connection the peer closed while idle, chunked and close-delimited answers, a peer that never answers
 * and one that is not there; and a {@link RemotePeer}'s probe through it (the request a peer receives, its
 * answer bytes, a peer's failure).
 */
class PeerHttpTest {

    /** What the server saw of one request. */
    record Seen(String requestLine, Map<String, String> headers, String body) {}

    private final List<Seen> seen = new CopyOnWriteArrayList<>();
    private final AtomicInteger connections = new AtomicInteger();
    /** Connections the client closed (or the server ended). */
    private final AtomicInteger closed = new AtomicInteger();

    private ServerSocket server;

    @AfterEach
    void stop() throws IOException {
        if (server != null) {
            server.close();
        }
    }

    /**
     * A server whose answer to each request is {@code answer.apply(n)} (n counts requests on that
     * connection from 1); a null answer closes the connection without answering.
     */
    private String serve(Function<Integer, String> answer) throws IOException {
        server = new ServerSocket(0);
        Thread.ofVirtual().start(() -> {
            while (!server.isClosed()) {
                try {
                    Socket socket = server.accept();
                    connections.incrementAndGet();
                    Thread.ofVirtual().start(() -> converse(socket, answer));
                } catch (IOException closed) {
                    return;
                }
            }
        });
        return "http://127.0.0.1:" + server.getLocalPort();
    }

    private void converse(Socket socket, Function<Integer, String> answer) {
        try (socket) {
            var in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.ISO_8859_1));
            OutputStream out = socket.getOutputStream();
            for (int n = 1; ; n++) {
                String requestLine = in.readLine();
                if (requestLine == null) {
                    return;
                }
                Map<String, String> headers = new java.util.LinkedHashMap<>();
                for (String h = in.readLine(); h != null && !h.isEmpty(); h = in.readLine()) {
                    int colon = h.indexOf(':');
                    headers.put(
                            h.substring(0, colon).toLowerCase(java.util.Locale.ROOT),
                            h.substring(colon + 1).trim());
                }
                char[] body = new char[Integer.parseInt(headers.getOrDefault("content-length", "0"))];
                for (int read = 0; read < body.length; ) {
                    read += in.read(body, read, body.length - read);
                }
                seen.add(new Seen(requestLine, headers, new String(body)));
                String reply = answer.apply(n);
                if (reply == null) {
                    return;
                }
                out.write(reply.getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
                if (reply.contains("Connection: close")) {
                    return;
                }
            }
        } catch (IOException | RuntimeException e) {
            // the client went away
        } finally {
            closed.incrementAndGet();
        }
    }

    private static String ok(String body) {
        return "HTTP/1.1 200 \r\nContent-Type: application/octet-stream\r\nContent-Length: " + body.length()
                + "\r\n\r\n" + body;
    }

    private static PeerHttp.Response call(PeerHttp http, String body) throws IOException {
        return http.send(
                        "POST",
                        "/v1/x",
                        () -> Map.of("Kvstore-Forwarded-By", "node-1"),
                        "application/octet-stream",
                        body.getBytes(StandardCharsets.ISO_8859_1))
                .answer();
    }

    @Test
    void successiveCallsShareOneKeepAliveConnectionAndCarryTheHeadersAndBody() throws Exception {
        PeerHttp http = PeerHttp.of(serve(n -> ok("answer " + n)), Duration.ofSeconds(30));

        assertThat(new String(call(http, "first").body())).isEqualTo("answer 1");
        PeerHttp.Response second = call(http, "second");

        assertThat(second.status()).isEqualTo(200);
        assertThat(new String(second.body())).isEqualTo("answer 2");
        assertThat(connections).hasValue(1);
        Seen last = seen.getLast();
        assertThat(last.requestLine()).isEqualTo("POST /v1/x HTTP/1.1");
        assertThat(last.headers())
                .containsEntry("host", "127.0.0.1:" + server.getLocalPort())
                .containsEntry("kvstore-forwarded-by", "node-1")
                .containsEntry("content-type", "application/octet-stream");
        assertThat(last.body()).isEqualTo("second");
    }

    @Test
    void callsInFlightTogetherUseOneConnectionEachAndAreAnsweredInAnyOrder() throws Exception {
        PeerHttp http = PeerHttp.of(serve(n -> ok("done")), Duration.ofSeconds(30));

        var a = http.send("POST", "/v1/a", Map::of, "text/plain", "a".getBytes());
        var b = http.send("POST", "/v1/b", Map::of, "text/plain", "b".getBytes());

        assertThat(new String(b.answer().body())).isEqualTo("done");
        assertThat(new String(a.answer().body())).isEqualTo("done");
        assertThat(connections).hasValue(2);
    }

    @Test
    void aConnectionThePeerClosedWhileIdleIsReplacedAndTheCallStillAnswered() throws Exception {
        // each connection answers its first request, then closes when the second one arrives
        PeerHttp http = PeerHttp.of(serve(n -> n == 1 ? ok("fresh") : null), Duration.ofSeconds(30));
        call(http, "one");

        PeerHttp.Response again = call(http, "two");

        assertThat(new String(again.body())).isEqualTo("fresh");
        assertThat(connections).hasValue(2);
        assertThat(seen).extracting(Seen::body).containsExactly("one", "two", "two");
    }

    @Test
    void chunkedAndCloseDelimitedAnswersAreReadWhole() throws Exception {
        PeerHttp http = PeerHttp.of(
                serve(n -> n == 1
                        ? "HTTP/1.1 502 \r\nContent-Type: application/problem+json\r\nTransfer-Encoding: chunked\r\n\r\n"
                                + "5\r\n{\"det\r\nf;ext=1\r\nail\":\"peer said\r\n2\r\n\"}\r\n0\r\n\r\n"
                        : "HTTP/1.1 200 \r\nConnection: close\r\n\r\nuntil the end"),
                Duration.ofSeconds(30));

        PeerHttp.Response problem = call(http, "x");
        PeerHttp.Response closing = call(http, "y");

        assertThat(problem.status()).isEqualTo(502);
        assertThat(new String(problem.body())).isEqualTo("{\"detail\":\"peer said\"}");
        assertThat(new String(closing.body())).isEqualTo("until the end");
        // the close-delimited answer ended its connection; the next call opens another
        call(http, "z");
        assertThat(connections).hasValue(2);
    }

    @Test
    void aPeerThatNeverAnswersFailsTheCallAtItsTimeout() throws Exception {
        try (ServerSocket silent = new ServerSocket(0)) {
            PeerHttp http = PeerHttp.of("http://127.0.0.1:" + silent.getLocalPort(), Duration.ofMillis(500));
            long start = System.nanoTime();

            assertThatThrownBy(() -> call(http, "anyone?"))
                    .isInstanceOf(SocketTimeoutException.class)
                    .hasMessageContaining("within");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
        }
    }

    @Test
    void aPeerThatIsNotThereFailsAtOnce() throws Exception {
        int port;
        try (ServerSocket gone = new ServerSocket(0)) {
            port = gone.getLocalPort();
        }
        PeerHttp http = PeerHttp.of("http://127.0.0.1:" + port, Duration.ofSeconds(30));

        assertThatThrownBy(() -> call(http, "hello")).isInstanceOf(IOException.class);
    }

    private RemotePeer peerAt(String address, Duration timeout) {
        JsonMapper json = JsonMapper.builder().build();
        return new RemotePeer(
                new Member("node-2", address, 1),
                new Member("node-1", "http://127.0.0.1:1", 1),
                java.net.http.HttpClient.newHttpClient(),
                json,
                timeout,
                "peer-token",
                "admin-token",
                new PeerCredentials(null, "a", json, Clock.systemUTC()));
    }

    private static List<BlockHash> hashes(int n) {
        List<BlockHash> out = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] h = new byte[32];
            h[0] = (byte) i;
            out.add(BlockHash.of(h));
        }
        return out;
    }

    @Test
    void aProbeSendsTheHashesWithThePeerTokenAndReadsOneTierPerBlock() throws Exception {
        // the peer holds block 0 in DRAM, not block 1
        String answer = new String(
                new byte[] {(byte) TierId.DRAM.ordinal(), (byte) ProbeWire.NOT_HELD}, StandardCharsets.ISO_8859_1);
        RemotePeer peer = peerAt(serve(n -> ok(answer)), Duration.ofSeconds(30));

        Peer.Probe probe =
                peer.sendProbe(Caller.LOCAL, "my ns", hashes(2), false).answer();

        assertThat(probe.tiers()).containsExactly("DRAM", null);
        assertThat(probe.lease()).isNull();
        Seen request = seen.getFirst();
        assertThat(request.requestLine()).isEqualTo("POST /v1/cluster/my%20ns/blocks:probe HTTP/1.1");
        assertThat(request.headers())
                .containsEntry("authorization", "Bearer peer-token")
                .containsEntry("kvstore-forwarded-by", "node-1");
        assertThat(request.body()).hasSize(1 + 2 * 32);
    }

    @Test
    void aProbeSentAgainOnAFreshConnectionIsSignedAgainWithAnotherNonce() throws Exception {
        // each connection answers its first probe, then reads the second whole and closes without answering: the
        // peer may have taken that probe's nonce, so the probe sent again on a new connection must not repeat it
        String answer = new String(new byte[] {(byte) ProbeWire.NOT_HELD}, StandardCharsets.ISO_8859_1);
        String address = serve(n -> n == 1 ? ok(answer) : null);
        JsonMapper json = JsonMapper.builder().build();
        RemotePeer peer = new RemotePeer(
                new Member("node-2", address, 1),
                new Member("node-1", "http://127.0.0.1:1", 1),
                java.net.http.HttpClient.newHttpClient(),
                json,
                Duration.ofSeconds(30),
                null,
                null,
                new PeerCredentials("a-cluster-secret-of-some-length", "node-1", json, Clock.systemUTC()));
        peer.sendProbe(Caller.LOCAL, "ns", hashes(1), false).answer();

        assertThat(peer.sendProbe(Caller.LOCAL, "ns", hashes(1), false).answer().tiers())
                .containsExactly((String) null);

        assertThat(connections).hasValue(2);
        assertThat(seen).hasSize(3);
        List<String> nonces = seen.stream()
                .map(s -> s.headers().get(PeerCredentials.NONCE.toLowerCase(java.util.Locale.ROOT)))
                .toList();
        assertThat(nonces).doesNotContainNull().doesNotHaveDuplicates();
        assertThat(seen.get(2).headers().get("kvstore-peer-signature"))
                .isNotEqualTo(seen.get(1).headers().get("kvstore-peer-signature"));
        assertThat(seen.get(2).body()).isEqualTo(seen.get(1).body());
    }

    /** A peer "node-2" signing for which node-1 shares the cluster secret, at {@code address}. */
    private static RemotePeer signingPeerAt(String address) {
        JsonMapper json = JsonMapper.builder().build();
        return new RemotePeer(
                new Member("node-2", address, 1),
                new Member("node-1", "http://127.0.0.1:1", 1),
                java.net.http.HttpClient.newHttpClient(),
                json,
                Duration.ofSeconds(30),
                null,
                null,
                new PeerCredentials("a-cluster-secret-of-some-length", "node-1", json, Clock.systemUTC()));
    }

    private static String conflict(String type) {
        String problem = "{\"type\":\"" + type + "\",\"title\":\"Conflict\",\"status\":409,"
                + "\"detail\":\"refused\",\"boot\":\"00000000000000aa\"}";
        return "HTTP/1.1 409 \r\nContent-Type: application/problem+json\r\nContent-Length: " + problem.length()
                + "\r\n\r\n" + problem;
    }

    @Test
    void aProbeThePeerRefusesForItsNonceIsSignedAgainAndSentOnce() throws Exception {
        String held = new String(new byte[] {(byte) TierId.DRAM.ordinal()}, StandardCharsets.ISO_8859_1);
        RemotePeer peer = signingPeerAt(
                serve(n -> n == 1 ? conflict(io.kvstore.service.error.NonceRefusedException.TYPE) : ok(held)));

        assertThat(peer.sendProbe(Caller.LOCAL, "ns", hashes(1), false).answer().tiers())
                .containsExactly("DRAM");

        assertThat(seen).hasSize(2);
        assertThat(seen)
                .extracting(s -> s.headers().get(PeerCredentials.NONCE.toLowerCase(java.util.Locale.ROOT)))
                .doesNotContainNull()
                .doesNotHaveDuplicates();
        assertThat(seen.get(1).body()).isEqualTo(seen.get(0).body());
    }

    @Test
    void aProbeRefusedForItsNonceTwiceFailsAfterOneResend() throws Exception {
        RemotePeer peer = signingPeerAt(serve(n -> conflict(io.kvstore.service.error.NonceRefusedException.TYPE)));

        assertThatThrownBy(() ->
                        peer.sendProbe(Caller.LOCAL, "ns", hashes(1), false).answer())
                .isInstanceOfSatisfying(
                        PeerException.class, e -> assertThat(e.status()).isEqualTo(409));
        assertThat(seen).hasSize(2);
    }

    @Test
    void anotherConflictOfAProbeIsNotSentAgain() throws Exception {
        RemotePeer peer = signingPeerAt(serve(n -> conflict("about:blank")));

        assertThatThrownBy(() ->
                        peer.sendProbe(Caller.LOCAL, "ns", hashes(1), false).answer())
                .isInstanceOfSatisfying(
                        PeerException.class, e -> assertThat(e.status()).isEqualTo(409));
        assertThat(seen).hasSize(1);
    }

    @Test
    void aProbeThePeerFailsWith500IsA502CarryingThePeersDetail() throws Exception {
        String problem = "{\"title\":\"Internal Server Error\",\"status\":500,\"detail\":\"disk on fire\"}";
        RemotePeer peer = peerAt(
                serve(n -> "HTTP/1.1 500 \r\nContent-Type: application/problem+json\r\nContent-Length: "
                        + problem.length() + "\r\n\r\n" + problem),
                Duration.ofSeconds(30));

        assertThatThrownBy(() ->
                        peer.sendProbe(Caller.LOCAL, "ns", hashes(3), false).answer())
                .isInstanceOfSatisfying(PeerException.class, e -> {
                    assertThat(e.status()).isEqualTo(502);
                    assertThat(e.unreachable()).isFalse();
                })
                .hasMessageContaining("node-2: disk on fire");
    }

    @Test
    void aProbeOfAPeerThatIsGoneIsUnreachable() throws Exception {
        int port;
        try (ServerSocket gone = new ServerSocket(0)) {
            port = gone.getLocalPort();
        }
        RemotePeer peer = peerAt("http://127.0.0.1:" + port, Duration.ofSeconds(30));

        assertThatThrownBy(() ->
                        peer.sendProbe(Caller.LOCAL, "ns", hashes(1), false).answer())
                .isInstanceOfSatisfying(
                        PeerException.class, e -> assertThat(e.unreachable()).isTrue());
    }

    private static Peers peers() {
        JsonMapper json = JsonMapper.builder().build();
        return new Peers(
                new LocalPeer(new Member("node-1", "http://127.0.0.1:1", 1), null, null, null, null, null),
                json,
                Duration.ofSeconds(30),
                "peer-token",
                "admin-token",
                new PeerCredentials(null, "a", json, Clock.systemUTC()));
    }

    private static void probe(Peers peers, Member member) throws Exception {
        ((RemotePeer) peers.of(member))
                .sendProbe(Caller.LOCAL, "ns", hashes(1), false)
                .answer();
    }

    @Test
    void aNodeBackAtAnotherAddressLeavesNoSocketOpenToItsOldOne() throws Exception {
        String address =
                serve(n -> ok(new String(new byte[] {(byte) ProbeWire.NOT_HELD}, StandardCharsets.ISO_8859_1)));
        Peers peers = peers();
        probe(peers, new Member("node-2", address, 1));
        assertThat(connections).hasValue(1);

        // node-2 registered again (its lease expired) at another address: the same server by another name here
        probe(peers, new Member("node-2", address.replace("127.0.0.1", "localhost"), 2));

        assertThat(connections).hasValue(2);
        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(closed).as("connections closed").hasValue(1));
    }

    @Test
    void closingThePeersClosesTheirPooledSockets() throws Exception {
        String address =
                serve(n -> ok(new String(new byte[] {(byte) ProbeWire.NOT_HELD}, StandardCharsets.ISO_8859_1)));
        Peers peers = peers();
        probe(peers, new Member("node-2", address, 1));
        probe(peers, new Member("node-3", address.replace("127.0.0.1", "localhost"), 1));
        assertThat(connections).hasValue(2);

        peers.close();

        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(30))
                .untilAsserted(() -> assertThat(closed).as("connections closed").hasValue(2));
    }

    @Test
    void onlyPlainHttpAddressesGetTheLeanClient() {
        assertThat(PeerHttp.of("http://10.0.0.5:8080", Duration.ofSeconds(1))).isNotNull();
        assertThat(PeerHttp.of("https://10.0.0.5:8443", Duration.ofSeconds(1))).isNull();
        assertThat(PeerHttp.of("not a url", Duration.ofSeconds(1))).isNull();
    }
}
