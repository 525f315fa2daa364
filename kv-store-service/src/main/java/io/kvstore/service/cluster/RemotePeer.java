package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import io.kvstore.service.admin.AdminController;
import io.kvstore.service.api.EngineResponses;
import io.kvstore.service.api.FetchRequest;
import io.kvstore.service.error.NonceRefusedException;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.PeerCredentials;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Another node, called over its engine API (the same endpoints engines use) with the {@value
 * Peer#FORWARDED} header. With {@code kvstore.cluster.secret} set, each call carries the caller the first
 * node authenticated, signed ({@link PeerCredentials}), and the peer enforces that caller's tenant rules;
 * without it (older configurations) calls carry {@code kvstore.cluster.peer-token} and admin calls
 * {@code kvstore.admin-token}, and the peer applies that token's rules instead.
 *
 * <p>Calls are signed for the peer's run as it publishes it in etcd ({@link Member#boot}), so the first call to a
 * run is taken as it is. A signed call the peer refuses for its nonce or its run (409 of {@link
 * NonceRefusedException#TYPE}: it took the same signed bytes already, as the JDK client's own retry of an
 * idempotent call resends them, or the call names another run of the peer) did no work there; it is signed again,
 * with a fresh nonce and the run the refusal named, and sent once more, on the lean probe client and the JDK's
 * alike. One resend only: a second refusal is the answer.
 */
public final class RemotePeer implements Peer {

    private final Member member;
    private final Member self;
    private final HttpClient http;
    private final JsonMapper json;
    private final Duration timeout;
    private final String token;
    private final String adminToken;
    private final PeerCredentials credentials;
    private final PeerHttp probes;
    /**
     * The peer's run ({@value PeerCredentials#BOOT}), signed into every call: as it published it in etcd ({@link
     * Member#boot}), or as its last refusal named it, whichever came last; null while neither did (a peer of an older
     * release). A peer restarted at the same address keeps this {@code RemotePeer}: the member set soon names its new
     * run, and a call sent before this node saw it is refused naming it, learned here.
     */
    private volatile @Nullable String boot;
    /** The run the member set named for the peer when last seen ({@link #published}). */
    private volatile @Nullable String publishedBoot;

    RemotePeer(
            Member member,
            Member self,
            HttpClient http,
            JsonMapper json,
            Duration timeout,
            String token,
            String adminToken,
            PeerCredentials credentials) {
        this.adminToken = adminToken;
        this.credentials = credentials;
        this.member = member;
        this.self = self;
        this.http = http;
        this.json = json;
        this.timeout = timeout;
        this.token = token;
        this.probes = PeerHttp.of(member.address(), timeout);
        this.boot = member.boot();
        this.publishedBoot = member.boot();
    }

    /**
     * Takes the run the member set names for the peer now: one it did not name before (the peer restarted and
     * registered again) is signed into the next calls. The run it named before changes nothing, so a stale copy
     * never undoes a newer run learned from a refusal.
     */
    void published(@Nullable String run) {
        if (run != null && !run.equals(publishedBoot)) {
            publishedBoot = run;
            boot = run;
        }
    }

    @Override
    public Member member() {
        return member;
    }

    /** Closes this peer's pooled probe connections (it moved to another address, or this node stops). */
    void close() {
        if (probes != null) {
            probes.close();
        }
    }

    @Override
    public Probe probe(Caller caller, String namespace, List<BlockHash> hashes, boolean lease) throws IOException {
        return sendProbe(caller, namespace, hashes, lease).answer();
    }

    /** A probe sent to a peer and not yet answered. */
    interface SentProbe {

        /** Waits for the answer on the calling thread; fails with a {@link PeerException} as {@link #probe} would. */
        Probe answer() throws PeerException;
    }

    /**
     * Sends the probe and returns before its answer: a cluster lookup sends its probes to every peer first,
     * looks up its own share, then reads the answers on its own request thread ({@link PeerHttp}: one
     * keep-alive socket per probe in flight, no hand-off between threads). A peer whose address is not
     * plain {@code http} is asked through the JDK's HTTP client instead.
     */
    SentProbe sendProbe(Caller caller, String namespace, List<BlockHash> hashes, boolean lease) {
        String path = ProbeServlet.path(encode(namespace));
        byte[] body = ProbeWire.request(hashes, lease);
        if (probes == null) {
            CompletableFuture<Probe> answer = probeAsync(caller, path, body, hashes.size());
            return () -> {
                try {
                    return answer.get();
                } catch (InterruptedException e) {
                    throw interrupted(e);
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof PeerException p ? p : unreachable(new IOException(e.getCause()));
                }
            };
        }
        PeerHttp.Call call;
        try {
            call = sendProbe(caller, path, body);
        } catch (IOException e) {
            PeerException failed = unreachable(e);
            return () -> {
                throw failed;
            };
        }
        return () -> {
            PeerHttp.Response response;
            try {
                response = call.answer();
                if (nonceRefused(response.status(), response.body())) {
                    response = sendProbe(caller, path, body).answer();
                }
            } catch (IOException e) {
                throw unreachable(e);
            }
            return ProbeWire.parseAnswer(body(response.status(), response.body()), hashes.size(), json);
        };
    }

    /** One probe on the lean client; asked again for a probe sent again: every attempt is signed anew. */
    private PeerHttp.Call sendProbe(Caller caller, String path, byte[] body) throws IOException {
        return java.util.Objects.requireNonNull(probes)
                .send("POST", path, () -> headers(caller, "POST", path, token, body), "application/octet-stream", body);
    }

    /** The probe through the JDK's HTTP client, completed by its threads. */
    private CompletableFuture<Probe> probeAsync(Caller caller, String path, byte[] body, int asked) {
        Supplier<HttpRequest> request = () -> request(caller, "POST", path, body)
                .header("Content-Type", "application/octet-stream")
                .build();
        return http.sendAsync(request.get(), HttpResponse.BodyHandlers.ofByteArray())
                .thenCompose(first -> nonceRefused(first.statusCode(), first.body())
                        ? http.sendAsync(request.get(), HttpResponse.BodyHandlers.ofByteArray())
                        : CompletableFuture.completedFuture(first))
                .handle((response, error) -> {
                    try {
                        if (error != null) {
                            Throwable cause = error instanceof CompletionException && error.getCause() != null
                                    ? error.getCause()
                                    : error;
                            if (cause instanceof IOException io) {
                                throw unreachable(io);
                            }
                            throw new CompletionException(cause);
                        }
                        return ProbeWire.parseAnswer(body(response.statusCode(), response.body()), asked, json);
                    } catch (PeerException e) {
                        throw new CompletionException(e);
                    }
                });
    }

    @Override
    public EngineResponses.Stored store(Caller caller, String namespace, byte[] frames) throws IOException {
        byte[] answer = send(() -> request(caller, "PUT", "/v1/namespaces/" + encode(namespace) + "/blocks", frames)
                .header("Content-Type", "application/octet-stream"));
        return read(answer, EngineResponses.Stored.class);
    }

    @Override
    public byte[] fetch(Caller caller, String namespace, List<BlockHash> hashes) throws IOException {
        byte[] body = json.writeValueAsBytes(
                new FetchRequest(hashes.stream().map(BlockHash::hex).toList()));
        return send(() -> request(caller, "POST", "/v1/namespaces/" + encode(namespace) + "/blocks:fetch", body)
                .header("Content-Type", "application/json"));
    }

    @Override
    public boolean delete(Caller caller, String namespace, BlockHash hash) throws IOException {
        return sendUnlessAbsent(() -> request(
                        caller, "DELETE", "/v1/namespaces/" + encode(namespace) + "/blocks/" + hash.hex(), null))
                != null;
    }

    @Override
    public int deleteNamespace(Caller caller, String namespace) throws IOException {
        byte[] answer = sendUnlessAbsent(() -> request(caller, "DELETE", "/v1/namespaces/" + encode(namespace), null));
        return answer == null
                ? -1
                : read(answer, EngineResponses.NamespaceDeleted.class).deletedBlocks();
    }

    @Override
    public void declare(Caller caller, String namespace, NamespaceDeclaration declaration) throws IOException {
        send(() -> request(caller, "PUT", "/v1/namespaces/" + encode(namespace), json.writeValueAsBytes(declaration))
                .header("Content-Type", "application/json"));
    }

    @Override
    public boolean release(Caller caller, String leaseId) throws IOException {
        return sendUnlessAbsent(() -> request(caller, "DELETE", "/v1/leases/" + encode(leaseId), null)) != null;
    }

    @Override
    public int pin(Caller caller, AdminController.PinRequest request, boolean pin, long revision) throws IOException {
        byte[] answer =
                send(() -> admin(caller, "POST", pin ? "/admin/pin" : "/admin/unpin", json.writeValueAsBytes(request))
                        .header("Content-Type", "application/json")
                        .header(PINS_REVISION, Long.toString(revision)));
        JsonNode counts = read(answer, JsonNode.class);
        return counts.path(pin ? "pinnedBlocks" : "unpinnedBlocks").asInt();
    }

    @Override
    public AdminController.Tiers tiers(Caller caller) throws IOException {
        return read(send(() -> admin(caller, "GET", "/admin/tiers", null)), AdminController.Tiers.class);
    }

    /** A call to the peer's admin API: the signed caller, or else this cluster's admin token. */
    private HttpRequest.Builder admin(Caller caller, String method, String path, byte[] body) {
        return request(caller, method, path, adminToken, body);
    }

    /** A call to the peer's engine API: the signed caller, or else the peer token. */
    private HttpRequest.Builder request(Caller caller, String method, String path, byte[] body) {
        return request(caller, method, path, token, body);
    }

    /** A call with {@code body} (null: none), signed over it. */
    private HttpRequest.Builder request(Caller caller, String method, String path, String bearer, byte[] body) {
        var builder = HttpRequest.newBuilder(URI.create(member.address() + path))
                .timeout(timeout)
                .method(
                        method,
                        body == null
                                ? HttpRequest.BodyPublishers.noBody()
                                : HttpRequest.BodyPublishers.ofByteArray(body));
        headers(caller, method, path, bearer, body == null ? new byte[0] : body).forEach(builder::header);
        return builder;
    }

    /**
     * The headers every node-to-node call carries: who forwards it, and the caller signed for this peer's node
     * name (what it registered, whatever address it is reached at) or the token.
     */
    private Map<String, String> headers(Caller caller, String method, String path, String bearer, byte[] body) {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put(FORWARDED, self.name());
        if (credentials.configured()) {
            headers.putAll(credentials.sign(member.name(), boot, method, path, caller, body));
        } else if (bearer != null && !bearer.isBlank()) {
            headers.put("Authorization", "Bearer " + bearer);
        }
        return headers;
    }

    /** The answer's body, or null when the peer answered 404 (it does not hold what was named). */
    private byte[] sendUnlessAbsent(Supplier<HttpRequest.Builder> request) throws PeerException {
        try {
            return send(request);
        } catch (PeerException e) {
            if (e.status() == 404) {
                return null;
            }
            throw e;
        }
    }

    /**
     * The answer's body; {@code request} is asked for each attempt, so a call the peer refused for its nonce is
     * signed again ({@link #nonceRefused}) and sent once more.
     */
    private byte[] send(Supplier<HttpRequest.Builder> request) throws PeerException {
        HttpResponse<byte[]> response = exchange(request.get());
        if (nonceRefused(response.statusCode(), response.body())) {
            response = exchange(request.get());
        }
        return body(response.statusCode(), response.body());
    }

    private HttpResponse<byte[]> exchange(HttpRequest.Builder request) throws PeerException {
        try {
            return http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw unreachable(e);
        } catch (InterruptedException e) {
            throw interrupted(e);
        }
    }

    /**
     * Whether the peer refused a signed call for its nonce alone (409 of {@link NonceRefusedException#TYPE}): it
     * took the same signed bytes before (the JDK client's own retry of an idempotent call on a stale pooled
     * connection resends them, and a party on the path may deliver a captured copy first), or the call fell below
     * this node's replay window there. The refused copy did no work, and the caller still waits for its answer, so
     * the call is signed again, with a fresh nonce, and sent once more; a second refusal is the answer. A refusal
     * for a nonce already taken means another copy of the same signed bytes did the work first, and the resend does
     * it again: harmless for stores, fetches, deletes and admin calls, but a leasing probe takes a second lease, and
     * the first copy's, whose answer went to whoever delivered that copy, stays held until it expires. This node's
     * own clients never deliver a probe twice ({@link PeerHttp} signs every attempt anew; the JDK client resends a
     * POST only when it could not connect), so only a party on the path does. Any other 409 (a namespace
     * redeclared, a block held) is the peer's answer and is not sent again.
     */
    private boolean nonceRefused(int status, byte[] body) {
        if (status != 409 || !credentials.configured()) {
            return false;
        }
        JsonNode problem;
        try {
            problem = json.readTree(body);
        } catch (RuntimeException notJson) {
            return false;
        }
        if (!NonceRefusedException.is(status, problem.path("type").asString(null))) {
            return false;
        }
        String run = problem.path(NonceRefusedException.BOOT).asString(null);
        if (run != null) {
            boot = run;
        }
        return true;
    }

    /** Keeps the thread's interrupt and answers 503: the call to the peer was abandoned, not refused. */
    private PeerException interrupted(InterruptedException e) {
        Thread.currentThread().interrupt();
        return new PeerException(503, "interrupted while calling node " + member.name(), e);
    }

    private PeerException unreachable(IOException e) {
        return new PeerException(503, "node " + member.name() + " (" + member.address() + ") is unreachable: " + e, e);
    }

    /** The body of a 2xx answer; any other status as a {@link PeerException} carrying the peer's detail. */
    private byte[] body(int status, byte[] body) throws PeerException {
        if (status / 100 == 2) {
            return body;
        }
        String detail;
        try {
            JsonNode problem = json.readTree(body);
            detail = problem.path("detail").asString("HTTP " + status);
        } catch (RuntimeException notJson) {
            detail = "HTTP " + status;
        }
        throw new PeerException(status >= 500 ? 502 : status, "node " + member.name() + ": " + detail, null);
    }

    /**
     * A 2xx answer read as {@code type}. One that is not JSON (a proxy's page, another service now at the peer's
     * address) is a {@link PeerException}, 502, like the peer's own failure: Jackson's exceptions are unchecked and
     * would escape every caller's {@code catch (IOException)}.
     */
    private <T> T read(byte[] answer, Class<T> type) throws PeerException {
        try {
            return json.readValue(answer, type);
        } catch (JacksonException e) {
            throw new PeerException(
                    502, "node " + member.name() + " answered what is not JSON: " + e.getOriginalMessage(), e);
        }
    }

    private static String encode(String segment) {
        return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
    }
}
