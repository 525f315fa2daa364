package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import io.kvstore.service.admin.AdminController;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.PeerCredentials;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * A peer's 2xx answer that is not JSON (a proxy's page, another service now on the peer's address) fails the call
 * with a {@link PeerException}, the {@code IOException} every caller of a {@link Peer} handles, not with Jackson's
 * unchecked exception, which escaped the callers' {@code catch (IOException)}: a cluster pin, written to etcd
 * already, then answered 500 instead of leaving that node to apply it from etcd.
 */
class RemotePeerMalformedAnswerTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Caller ADMIN = new Caller("ops", "config-9", List.of(), List.of(), false, true);

    private HttpServer notAKvstore;
    private RemotePeer peer;

    @BeforeEach
    void start() throws Exception {
        notAKvstore = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        notAKvstore.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            byte[] page = "<html><body>Welcome</body></html>".getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "text/html");
            exchange.sendResponseHeaders(200, page.length);
            exchange.getResponseBody().write(page);
            exchange.close();
        });
        notAKvstore.start();
        peer = new RemotePeer(
                new Member("b", "http://127.0.0.1:" + notAKvstore.getAddress().getPort(), 1),
                new Member("a", "http://127.0.0.1:1", 1),
                java.net.http.HttpClient.newHttpClient(),
                JSON,
                Duration.ofSeconds(30),
                "peer-token",
                "admin-token",
                new PeerCredentials(null, "a", JSON, Clock.systemUTC()));
    }

    @AfterEach
    void stop() {
        peer.close();
        notAKvstore.stop(0);
    }

    @Test
    void aPinAnsweredWithAPageIsAPeerFailure() {
        var request = new AdminController.PinRequest("ns", List.of("00"), null, null, null);
        assertPeerFailure(() -> peer.pin(ADMIN, request, true, 1));
    }

    @Test
    void aStoreAnsweredWithAPageIsAPeerFailure() {
        assertPeerFailure(() -> peer.store(ADMIN, "ns", new byte[0]));
    }

    @Test
    void tiersAnsweredWithAPageAreAPeerFailure() {
        assertPeerFailure(() -> peer.tiers(ADMIN));
    }

    @Test
    void aNamespaceDeleteAnsweredWithAPageIsAPeerFailure() {
        assertPeerFailure(() -> peer.deleteNamespace(ADMIN, "ns"));
    }

    private static void assertPeerFailure(ThrowingCallable call) {
        assertThatThrownBy(call)
                .isInstanceOf(PeerException.class)
                .hasMessageContaining("node b")
                .hasMessageContaining("not JSON");
    }
}
