package io.kvstore.service.cluster;

import com.sun.net.httpserver.HttpServer;
import io.kvstore.service.security.PeerCredentials;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;

/**
 * An HTTP relay in front of a node that delivers a request twice when asked to, as a proxy that retries or a party
 * replaying a captured copy would, and answers with the node's last answer. It records the nonce of every request it
 * gets and the status of every answer the node gives.
 */
final class DuplicatingRelay implements AutoCloseable {

    /** Headers the JDK client sets itself. */
    private static final Set<String> RESTRICTED = Set.of("host", "content-length", "connection", "expect", "upgrade");

    /** The nonce of every request the relay got from the calling node, in order. */
    final List<String> nonces = new CopyOnWriteArrayList<>();
    /** The status of every answer the relay got from the node, in order. */
    final List<Integer> answers = new CopyOnWriteArrayList<>();

    private final HttpServer server;

    /**
     * @param target the node's base URL
     * @param twice asked once for each request the relay gets: whether to deliver it twice
     */
    DuplicatingRelay(String target, BooleanSupplier twice) throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            var request = HttpRequest.newBuilder(URI.create(target + exchange.getRequestURI()))
                    .method(
                            exchange.getRequestMethod(),
                            HttpRequest.BodyPublishers.ofByteArray(
                                    exchange.getRequestBody().readAllBytes()));
            exchange.getRequestHeaders().forEach((name, values) -> {
                if (!RESTRICTED.contains(name.toLowerCase(Locale.ROOT))) {
                    request.header(name, values.getFirst());
                }
            });
            nonces.add(exchange.getRequestHeaders().getFirst(PeerCredentials.NONCE));
            try {
                int copies = twice.getAsBoolean() ? 2 : 1;
                HttpResponse<byte[]> answer = null;
                for (int i = 0; i < copies; i++) {
                    answer = ClusterNodes.HTTP.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
                    answers.add(answer.statusCode());
                }
                exchange.getResponseHeaders()
                        .add(
                                "Content-Type",
                                answer.headers().firstValue("Content-Type").orElse("text/plain"));
                int length = answer.body().length;
                exchange.sendResponseHeaders(answer.statusCode(), length == 0 ? -1 : length);
                exchange.getResponseBody().write(answer.body());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                exchange.sendResponseHeaders(502, -1);
            } finally {
                exchange.close();
            }
        });
        server.start();
    }

    /** The relay's base URL, for the calling node's member record of the target. */
    String address() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
