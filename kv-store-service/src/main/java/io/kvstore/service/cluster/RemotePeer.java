package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import io.kvstore.service.admin.AdminController;
import io.kvstore.service.api.EngineResponses;
import io.kvstore.service.api.FetchRequest;
import io.kvstore.service.namespace.NamespaceDeclaration;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Another node, called over its engine API (the same endpoints engines use) with the {@value
 * Peer#FORWARDED} header and, when configured, the node's bearer token.
 */
public final class RemotePeer implements Peer {

    private final Member member;
    private final Member self;
    private final HttpClient http;
    private final JsonMapper json;
    private final Duration timeout;
    private final String token;
    private final String adminToken;

    RemotePeer(
            Member member,
            Member self,
            HttpClient http,
            JsonMapper json,
            Duration timeout,
            String token,
            String adminToken) {
        this.adminToken = adminToken;
        this.member = member;
        this.self = self;
        this.http = http;
        this.json = json;
        this.timeout = timeout;
        this.token = token;
    }

    @Override
    public Member member() {
        return member;
    }

    @Override
    public Probe probe(String namespace, List<BlockHash> hashes, boolean lease) throws IOException {
        byte[] body = json.writeValueAsBytes(
                new ProbeRequest(hashes.stream().map(BlockHash::hex).toList(), lease));
        byte[] answer = send(request("/v1/namespaces/" + encode(namespace) + "/blocks:probe")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)));
        return json.readValue(answer, Probe.class);
    }

    @Override
    public EngineResponses.Stored store(String namespace, byte[] frames) throws IOException {
        byte[] answer = send(request("/v1/namespaces/" + encode(namespace) + "/blocks")
                .header("Content-Type", "application/octet-stream")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(frames)));
        return json.readValue(answer, EngineResponses.Stored.class);
    }

    @Override
    public byte[] fetch(String namespace, List<BlockHash> hashes) throws IOException {
        byte[] body = json.writeValueAsBytes(
                new FetchRequest(hashes.stream().map(BlockHash::hex).toList()));
        return send(request("/v1/namespaces/" + encode(namespace) + "/blocks:fetch")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)));
    }

    @Override
    public void declare(String namespace, NamespaceDeclaration declaration) throws IOException {
        send(request("/v1/namespaces/" + encode(namespace))
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(json.writeValueAsBytes(declaration))));
    }

    @Override
    public boolean release(String leaseId) throws IOException {
        try {
            send(request("/v1/leases/" + encode(leaseId)).DELETE());
            return true;
        } catch (PeerException e) {
            if (e.status() == 404) {
                return false;
            }
            throw e;
        }
    }

    @Override
    public int pin(AdminController.PinRequest request, boolean pin) throws IOException {
        byte[] answer = send(admin(pin ? "/admin/pin" : "/admin/unpin")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(json.writeValueAsBytes(request))));
        JsonNode counts = json.readTree(answer);
        return counts.path(pin ? "pinnedBlocks" : "unpinnedBlocks").asInt();
    }

    @Override
    public AdminController.Tiers tiers() throws IOException {
        return json.readValue(send(admin("/admin/tiers").GET()), AdminController.Tiers.class);
    }

    /** A call to the peer's admin API, with this cluster's admin token (every node has the same). */
    private HttpRequest.Builder admin(String path) {
        var request = HttpRequest.newBuilder(URI.create(member.address() + path))
                .timeout(timeout)
                .header(FORWARDED, self.name());
        if (adminToken != null && !adminToken.isBlank()) {
            request.header("Authorization", "Bearer " + adminToken);
        }
        return request;
    }

    private HttpRequest.Builder request(String path) {
        var builder = HttpRequest.newBuilder(URI.create(member.address() + path))
                .timeout(timeout)
                .header(FORWARDED, self.name());
        if (token != null && !token.isBlank()) {
            builder.header("Authorization", "Bearer " + token);
        }
        return builder;
    }

    private byte[] send(HttpRequest.Builder request) throws PeerException {
        HttpResponse<byte[]> response;
        try {
            response = http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new PeerException(
                    503, "node " + member.name() + " (" + member.address() + ") is unreachable: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PeerException(503, "interrupted while calling node " + member.name(), e);
        }
        int status = response.statusCode();
        if (status / 100 == 2) {
            return response.body();
        }
        String detail;
        try {
            JsonNode problem = json.readTree(response.body());
            detail = problem.path("detail").asString("HTTP " + status);
        } catch (RuntimeException notJson) {
            detail = "HTTP " + status;
        }
        throw new PeerException(status >= 500 ? 502 : status, "node " + member.name() + ": " + detail, null);
    }

    private static String encode(String segment) {
        return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
