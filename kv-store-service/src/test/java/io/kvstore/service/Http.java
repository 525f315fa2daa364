package io.kvstore.service;

import io.kvstore.block.BlockHash;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/** A small HTTP client for tests against the real server, and the block framing written by hand. */
final class Http {

    static final HttpClient CLIENT = HttpClient.newHttpClient();

    private final String base;

    Http(int port) {
        this.base = "http://127.0.0.1:" + port;
    }

    /** A client of the service {@code app} runs (started with {@code --server.port=0}). */
    static Http of(ConfigurableApplicationContext app) {
        return new Http(((WebServerApplicationContext) app).getWebServer().getPort());
    }

    HttpResponse<String> send(String method, String path, String contentType, String body, String... headers)
            throws IOException, InterruptedException {
        var builder = HttpRequest.newBuilder(URI.create(base + path))
                .method(
                        method,
                        body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (contentType != null) {
            builder.header("Content-Type", contentType);
        }
        if (headers.length > 0) {
            builder.headers(headers);
        }
        return CLIENT.send(builder.build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> json(String method, String path, String body, String... headers)
            throws IOException, InterruptedException {
        return send(method, path, "application/json", body, headers);
    }

    HttpResponse<String> get(String path, String... headers) throws IOException, InterruptedException {
        return send("GET", path, null, null, headers);
    }

    HttpResponse<String> putBytes(String path, String contentType, byte[] body, String... headers)
            throws IOException, InterruptedException {
        var builder = HttpRequest.newBuilder(URI.create(base + path))
                .header("Content-Type", contentType)
                .PUT(HttpRequest.BodyPublishers.ofByteArray(body));
        if (headers.length > 0) {
            builder.headers(headers);
        }
        return CLIENT.send(builder.build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<byte[]> fetch(String namespace, String jsonBody) throws IOException, InterruptedException {
        return CLIENT.send(
                HttpRequest.newBuilder(URI.create(base + "/v1/namespaces/" + namespace + "/blocks:fetch"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(jsonBody))
                        .build(),
                HttpResponse.BodyHandlers.ofByteArray());
    }

    /** Frames {@code blocks[i]} under {@code hashes[i]}, each with its predecessor as parent ({@code firstParent} for the first). */
    static byte[] frames(List<BlockHash> hashes, List<byte[]> blocks, BlockHash firstParent) throws IOException {
        var out = new ByteArrayOutputStream();
        var data = new DataOutputStream(out);
        for (int i = 0; i < hashes.size(); i++) {
            byte[] hash = hashes.get(i).toBytes();
            data.writeByte(hash.length);
            data.write(hash);
            BlockHash parent = i == 0 ? firstParent : hashes.get(i - 1);
            if (parent == null) {
                data.writeByte(0);
            } else {
                data.writeByte(parent.length());
                data.write(parent.toBytes());
            }
            data.writeInt(blocks.get(i).length);
            data.write(blocks.get(i));
        }
        return out.toByteArray();
    }

    static String hexList(List<BlockHash> hashes) {
        return hashes.stream()
                .map(h -> "\"" + h.hex() + "\"")
                .collect(java.util.stream.Collectors.joining(",", "[", "]"));
    }
}
