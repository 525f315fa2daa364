package io.kvstore.service.cluster;

import com.sun.net.httpserver.HttpServer;
import io.kvstore.service.error.NonceRefusedException;
import io.kvstore.service.security.PeerCredentials;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import tools.jackson.databind.json.JsonMapper;

/**
 * A party on the path between two nodes: a {@link RemotePeer} whose calls reach it, signed with the cluster's
 * secret, and which it can send on to a real node as they were, or with another body. It answers as the node in
 * its run {@code boot} would: a call signed for another run ({@value PeerCredentials#BOOT}, as the first call of a
 * peer that has not learned it yet) is refused for its nonce, naming the run, so the peer signs it again for it.
 */
final class OnThePath implements AutoCloseable {

    /** One request as it left the sending node. */
    record Captured(String method, String path, Map<String, String> headers, byte[] body) {}

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final AtomicReference<Captured> last = new AtomicReference<>();
    private final HttpServer server;

    /** @param boot the run of the node the calls are meant for ({@link PeerCredentials#boot}) */
    OnThePath(String boot) throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            if (!boot.equals(exchange.getRequestHeaders().getFirst(PeerCredentials.BOOT))) {
                byte[] refusal = JSON.writeValueAsBytes(
                        Map.of("type", NonceRefusedException.TYPE, "status", 409, NonceRefusedException.BOOT, boot));
                exchange.getRequestBody().readAllBytes();
                exchange.getResponseHeaders().add("Content-Type", "application/problem+json");
                exchange.sendResponseHeaders(409, refusal.length);
                exchange.getResponseBody().write(refusal);
                exchange.close();
                return;
            }
            Map<String, String> headers = new LinkedHashMap<>();
            exchange.getRequestHeaders().forEach((name, values) -> headers.put(name, values.getFirst()));
            last.set(new Captured(
                    exchange.getRequestMethod(),
                    exchange.getRequestURI().getRawPath(),
                    headers,
                    exchange.getRequestBody().readAllBytes()));
            // a probe of one block answers "not held"; anything else an empty JSON object
            byte[] answer = exchange.getRequestURI().getRawPath().endsWith("blocks:probe")
                    ? new byte[] {(byte) ProbeWire.NOT_HELD}
                    : "{}".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, answer.length);
            exchange.getResponseBody().write(answer);
            exchange.close();
        });
        server.start();
    }

    /**
     * The store of {@code frames} into {@code ns} for {@code caller} that node "a" sends to the peer named
     * {@code node}, in its run {@code boot}, as it was captured on its way there.
     */
    static Captured capturedStore(
            String node, String boot, io.kvstore.service.security.Caller caller, String ns, byte[] frames)
            throws IOException {
        try (OnThePath path = new OnThePath(boot)) {
            try {
                path.peer(node).store(caller, ns, frames);
            } catch (RuntimeException | IOException ignored) {
                // the party on the path answers nothing a store's answer is read from
            }
            return path.last();
        }
    }

    /** A peer "b" as node "a" calls it, with the cluster's secret; its calls come here. */
    RemotePeer peer() {
        return peer("b");
    }

    /** The peer named {@code node} in the member set, as node "a" calls it; its calls come here. */
    RemotePeer peer(String node) {
        return peerAt(node, "http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** The peer named {@code node} in the member set at address {@code base}, as node "a" calls it. */
    static RemotePeer peerAt(String node, String base) {
        return new RemotePeer(
                new Member(node, base, 1),
                new Member("a", "http://127.0.0.1:1", 1),
                java.net.http.HttpClient.newHttpClient(),
                JSON,
                Duration.ofSeconds(10),
                null,
                null,
                new PeerCredentials(ClusterNodes.SECRET, "a", JSON, Clock.systemUTC()));
    }

    /** The last request that came here. */
    Captured last() {
        return last.get();
    }

    /** {@code request} sent on to the node at {@code base} with {@code body}, its headers as they were signed. */
    static HttpResponse<byte[]> passOn(String base, Captured request, byte[] body) throws Exception {
        var builder = HttpRequest.newBuilder(URI.create(base + request.path()))
                .method(request.method(), HttpRequest.BodyPublishers.ofByteArray(body));
        request.headers().forEach((name, value) -> {
            String lower = name.toLowerCase(Locale.ROOT);
            if (lower.startsWith("kvstore-") || lower.equals("content-type")) {
                builder.header(name, value);
            }
        });
        return ClusterNodes.HTTP.send(builder.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
