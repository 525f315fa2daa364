package io.kvstore.service.security;

import io.kvstore.service.error.ForbiddenException;
import io.kvstore.service.error.NonceRefusedException;
import io.kvstore.service.error.TooManyRequestsException;
import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Clock;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;

/**
 * How cluster nodes vouch for their callers: a node that forwards an engine or admin call to a peer sends the caller it
 * authenticated ({@value #CALLER}: the tenant, token id, grants and roles as base64url JSON) and an HMAC-SHA256 over
 * that, the method, the path, the SHA-256 of the body ({@value #BODY}), the node the call is meant for ({@value
 * #TARGET}), the node forwarding it ({@value #FORWARDED}) and a timestamp, keyed with the shared {@code
 * kvstore.cluster.secret} ({@value #SIGNATURE}: {@code <unix seconds>.<hex>}). The peer checks the body against its
 * signed digest before the body is read by anything else ({@link PeerBodyFilter}: 401 when it was changed on the way),
 * checks the signature in constant time and then enforces the same tenant rules on the forwarded caller as the first
 * node did, so tokens need to be configured (or issued) only where engines call, and a stranger without the secret
 * cannot claim another tenant's identity. The secret itself never travels; a signature is good for its one method,
 * path, caller and body, at its one node, once, within {@link #MAX_SKEW_SECONDS} of its timestamp. The path is the
 * call's below the node's registered address, checked below the peer's servlet context path ({@link #signedPath}), so
 * nodes served under {@code server.servlet.context-path} verify what their peers signed.
 *
 * <p>The node a call is meant for is named by its {@code kvstore.cluster.node-name}: the name the peer
 * registered in the member set, which the sending node reads there, and which the receiving node has in its
 * own configuration. Its address would not do: a node reached at a hostname, an IP or a proxy's address does
 * not know every form it is called by. Every node shares the secret, so without the name a call captured on
 * its way to one node could be replayed to another within the skew window, to store or delete where its
 * caller never asked; with it the other node refuses it (403, naming both nodes).
 *
 * <p>{@value #FORWARDED} is what makes a call node-to-node: a call with it is answered from the node's own tiers,
 * one without it is routed through the cluster (to every owner, to etcd, to every live node). It is signed too,
 * and a signed caller is taken only with it: stripped from a call captured on its way to one node, the node would
 * route that call on to the others with signatures of its own, the replay to other nodes the target prevents.
 *
 * <p>Each signed call carries a nonce ({@value #NONCE}: this process's random 64 bits and a count of its calls to
 * the target node), covered by the signature, and the node it was meant for takes each nonce once ({@link
 * SeenNonces}: an anti-replay window per sending process): the same call sent there again within the window,
 * captured on the wire, is refused with 409 (before, a captured store or delete could be sent again, and did its
 * work again, for 5 minutes). The count is kept per target so each node sees its senders' counts without gaps, and
 * its window spans only the calls in flight to it. A nonce is taken only once the body was checked ({@link
 * PeerBodyFilter}), so a call whose body a party on the path changed does not use up the nonce of the call it was
 * taken from. The node keeps the windows of at most {@code kvstore.cluster.peer-senders} sending processes (8 KiB
 * each), forgetting one {@link SeenNonces#idleSeconds} after its last accepted call; past that it refuses calls of
 * new senders with 429 rather than forget a live one.
 *
 * <p>The windows live in memory, so a restarted node has forgotten the nonces its earlier run took. Each run of a
 * node therefore draws a random id at start ({@link #boot}), and each signed call names the run of the node it is
 * meant for ({@value #BOOT}, covered by the signature); a node takes only calls signed for its own run, so a call
 * captured before it restarted cannot be sent to it again within the skew window. A call signed for another run (an
 * earlier one, or {@value #UNKNOWN_BOOT} before the caller learned any) is refused like a repeated nonce ({@link
 * NonceRefusedException}, 409 of its own type naming this run), before its body is read, and the calling node signs
 * it again for the run named. Why not refuse calls signed before this node started: timestamps come from the
 * caller's clock, up to {@link #MAX_SKEW_SECONDS} apart from this node's, so that check would either refuse a
 * lagging node's legitimate calls for minutes after every restart or let calls captured in the minutes before the
 * restart through; a run id needs no clock. A node publishes its run in etcd beside its member record ({@code
 * Member.boot}), so its peers sign their first call to it for that run and it goes through in one round trip; the
 * refusal teaches the run only to a peer whose copy is stale (the node restarted a moment ago) or that found none (a
 * node of an older release). The run is no secret: a call signed for it still needs the cluster's secret.
 */
public final class PeerCredentials {

    /** The forwarded caller, base64url JSON of {@link Caller}. */
    public static final String CALLER = "Kvstore-Caller";
    /**
     * {@code <unix seconds>.<hex HMAC-SHA256>} over timestamp, method, path, {@value #CALLER}, {@value #BODY},
     * {@value #TARGET}, {@value #FORWARDED}, {@value #NONCE} and {@value #BOOT}.
     */
    public static final String SIGNATURE = "Kvstore-Peer-Signature";
    /** The hex SHA-256 of the request body (of no bytes when there is none), covered by {@value #SIGNATURE}. */
    public static final String BODY = "Kvstore-Body-Sha256";
    /** The node name of the peer the call is meant for, covered by {@value #SIGNATURE}. */
    public static final String TARGET = "Kvstore-Peer-Target";
    /**
     * Marks a node-to-node call (answered from the called node's own tiers, never routed again); its value is the
     * forwarding node's name, covered by {@value #SIGNATURE}.
     */
    public static final String FORWARDED = "Kvstore-Forwarded-By";
    /**
     * 32 hex digits, unique to one signed call and covered by {@value #SIGNATURE}: the called node takes each once
     * within the window.
     */
    public static final String NONCE = "Kvstore-Peer-Nonce";
    /**
     * The run of the called node the call is signed for: the 16 hex digits that node drew when it started, as it
     * publishes them in etcd or its refusal named them ({@link NonceRefusedException#BOOT}); covered by {@value
     * #SIGNATURE}. A node takes only calls signed for its own run, so a call captured before it restarted is refused
     * by the next run, which no longer knows the nonces the earlier one took.
     */
    public static final String BOOT = "Kvstore-Peer-Boot";
    /** What a calling node signs into {@value #BOOT} before it learned the called node's run: refused, then learned. */
    public static final String UNKNOWN_BOOT = "unknown";

    static final long MAX_SKEW_SECONDS = 300;
    /**
     * Sending processes whose replay windows are kept by default: 8 KiB each, 32 MiB at most; a process counts from
     * its start until {@link SeenNonces#idleSeconds} after its last call here, so restarts count for a while.
     */
    public static final int DEFAULT_SENDERS = 4_096;
    /**
     * The request attribute holding a forwarded caller whose signature held and whose nonce this node took (its body
     * checked too, when {@link PeerBodyFilter} set it).
     */
    static final String VERIFIED = PeerCredentials.class.getName() + ".verified";

    private final byte @Nullable [] secret;
    private final String node;
    private final JsonMapper json;
    private final Clock clock;
    private final SeenNonces seen;
    private final int capacity;
    /** This process's half of every nonce it signs: two nodes, or two runs of one, never send the same. */
    private final long noncePrefix = new SecureRandom().nextLong();
    /**
     * This run of this node, 16 hex digits drawn at start: a signed call must name it ({@value #BOOT}), and a refusal
     * of a call's nonce or run names it ({@link NonceRefusedException}) so the caller signs the call again for it.
     */
    private final String boot = HexFormat.of().toHexDigits(new SecureRandom().nextLong());
    /** The calls signed for each target node, counted from 1: the other half of each nonce. */
    private final Map<String, AtomicLong> calls = new ConcurrentHashMap<>();

    /** A forwarded call whose signature holds: its caller, and the time and nonce it was signed with. */
    record Signed(Caller caller, long at, SeenNonces.Nonce nonce) {}

    /**
     * @param secret {@code kvstore.cluster.secret}; null or blank: none, no caller is forwarded or accepted
     * @param node this node's {@code kvstore.cluster.node-name} (empty when it has none): the only target whose
     *     calls it accepts, and the forwarding node its own signed calls name ({@value #FORWARDED})
     */
    public PeerCredentials(@Nullable String secret, String node, JsonMapper json, Clock clock) {
        this(secret, node, json, clock, DEFAULT_SENDERS);
    }

    /** @param senders {@code kvstore.cluster.peer-senders}: the most sending processes whose windows are kept */
    public PeerCredentials(@Nullable String secret, String node, JsonMapper json, Clock clock, int senders) {
        this.secret = secret == null || secret.isBlank() ? null : secret.getBytes(StandardCharsets.UTF_8);
        this.node = node;
        this.json = json;
        this.clock = clock;
        this.capacity = senders;
        this.seen = new SeenNonces(MAX_SKEW_SECONDS, senders);
    }

    /** This run of this node: what calls signed for it must name in {@value #BOOT}. */
    public String boot() {
        return boot;
    }

    /** Whether {@code kvstore.cluster.secret} is set: only then are callers forwarded and accepted. */
    public boolean configured() {
        return secret != null;
    }

    /**
     * The seven headers that carry {@code caller} on a call of {@code method} to {@code path} with {@code body}
     * (empty for a call without one) from this node to the node named {@code target} in the member set, in its run
     * {@code targetBoot} (null when this node has not learned it yet: {@value #UNKNOWN_BOOT}, refused and learned).
     */
    public Map<String, String> sign(
            String target, @Nullable String targetBoot, String method, String path, Caller caller, byte[] body) {
        String encoded = Base64.getUrlEncoder().withoutPadding().encodeToString(json.writeValueAsBytes(caller));
        String digest = digest(body);
        long now = clock.instant().getEpochSecond();
        long count = calls.computeIfAbsent(target, t -> new AtomicLong()).incrementAndGet();
        String nonce = new SeenNonces.Nonce(noncePrefix, count).toString();
        String run = targetBoot == null ? UNKNOWN_BOOT : targetBoot;
        return Map.of(
                CALLER,
                encoded,
                BODY,
                digest,
                TARGET,
                target,
                FORWARDED,
                node,
                NONCE,
                nonce,
                BOOT,
                run,
                SIGNATURE,
                now + "."
                        + HexFormat.of().formatHex(mac(now, method, path, encoded, digest, target, node, nonce, run)));
    }

    /** The hex SHA-256 of {@code body}, as {@value #BODY} carries it. */
    static String digest(byte[] body) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The caller a peer forwarded on {@code request}, or null when the request forwards none; its nonce taken (by
     * {@link PeerBodyFilter}, once the body was checked, or else here).
     *
     * @throws ForbiddenException when it forwards one without a valid signature (unset secret, wrong secret,
     *     another request's signature, one signed for another node, or a stale one)
     * @throws NonceRefusedException when it was signed for another run of this node ({@value #BOOT}: one before a
     *     restart), or this node took the call's nonce already (a replay), or it is below its
     *     sender's replay window
     * @throws TooManyRequestsException when the call is a new sender's and this node keeps as many as it may
     */
    public @Nullable Caller forwarded(HttpServletRequest request) {
        if (request.getAttribute(VERIFIED) instanceof Caller verified) {
            return verified;
        }
        Signed signed = verify(request);
        if (signed == null) {
            return null;
        }
        take(signed);
        request.setAttribute(VERIFIED, signed.caller());
        return signed.caller();
    }

    /**
     * The call a peer forwarded on {@code request}, its signature checked (headers only), its nonce not taken yet;
     * null when the request forwards no caller.
     *
     * @throws ForbiddenException as {@link #forwarded}
     * @throws NonceRefusedException when it was signed for another run of this node ({@value #BOOT})
     */
    @Nullable
    Signed verify(HttpServletRequest request) {
        String encoded = request.getHeader(CALLER);
        if (encoded == null) {
            return null;
        }
        if (secret == null) {
            throw new ForbiddenException("a forwarded caller (" + CALLER + ") is accepted only from cluster peers "
                    + "that share kvstore.cluster.secret, and none is set here");
        }
        String signature = request.getHeader(SIGNATURE);
        int dot = signature == null ? -1 : signature.indexOf('.');
        byte[] given;
        long at;
        try {
            at = Long.parseLong(signature.substring(0, dot));
            given = HexFormat.of().parseHex(signature.substring(dot + 1));
        } catch (RuntimeException e) {
            throw new ForbiddenException("a forwarded caller needs a valid " + SIGNATURE + " header");
        }
        // the body itself was checked against this digest before anything read it (PeerBodyFilter)
        String digest = request.getHeader(BODY);
        if (digest == null) {
            throw new ForbiddenException("a forwarded caller needs a " + BODY + " header (the SHA-256 of the body, "
                    + "covered by " + SIGNATURE + "); nodes of older releases do not send it: upgrade every node");
        }
        String target = request.getHeader(TARGET);
        if (target == null) {
            throw new ForbiddenException("a forwarded caller needs a " + TARGET + " header (the node the call is "
                    + "meant for, covered by " + SIGNATURE + "); nodes of older releases do not send it: upgrade "
                    + "every node");
        }
        String from = request.getHeader(FORWARDED);
        if (from == null) {
            throw new ForbiddenException("a forwarded caller is taken only on a node-to-node call, marked " + FORWARDED
                    + " (covered by " + SIGNATURE + "); without it the call would be routed on to other nodes");
        }
        String nonceHeader = request.getHeader(NONCE);
        if (nonceHeader == null) {
            throw new ForbiddenException("a forwarded caller needs a " + NONCE + " header (unique to the call, covered "
                    + "by " + SIGNATURE + "); nodes of older releases do not send it: upgrade every node");
        }
        SeenNonces.Nonce nonce = SeenNonces.Nonce.parse(nonceHeader);
        if (nonce == null) {
            throw new ForbiddenException("a forwarded caller needs a " + NONCE + " of 32 hex digits");
        }
        String run = request.getHeader(BOOT);
        if (run == null) {
            throw new ForbiddenException("a forwarded caller needs a " + BOOT + " header (the run of the node the call "
                    + "is meant for, covered by " + SIGNATURE + "); nodes of older releases do not send it: upgrade "
                    + "every node");
        }
        byte[] expected =
                mac(at, request.getMethod(), signedPath(request), encoded, digest, target, from, nonceHeader, run);
        if (!MessageDigest.isEqual(given, expected)) {
            throw new ForbiddenException("the forwarded caller's " + SIGNATURE
                    + " does not match: the calling node does not share this node's kvstore.cluster.secret");
        }
        // only once the signature holds: the name is the signer's, not a stranger's
        if (node.isEmpty()) {
            throw new ForbiddenException("the forwarded call was signed for node '" + target + "', and this node has "
                    + "no kvstore.cluster.node-name: it takes forwarded calls only as a named cluster node");
        }
        if (!target.equals(node)) {
            throw new ForbiddenException("the forwarded call was signed for node '" + target + "', this is node '"
                    + node + "' (kvstore.cluster.node-name): a call meant for another node, replayed here");
        }
        // a run this node's replay windows do not cover: an earlier run's call captured and sent again, or a caller
        // that has not learned this run yet; no work done, so the caller signs it again for the run named here
        if (!run.equals(boot)) {
            throw new NonceRefusedException(
                    "this signed call was signed for run " + run + " of node '" + node
                            + "', this is its run " + boot + " (" + BOOT
                            + "): a call signed before this node (re)started, "
                            + "whose nonce this run cannot tell from a replay; sign it again for this run",
                    boot);
        }
        if (Math.abs(clock.instant().getEpochSecond() - at) > MAX_SKEW_SECONDS) {
            throw new ForbiddenException("the forwarded caller's signature is more than " + MAX_SKEW_SECONDS
                    + " s old or ahead (clocks of the nodes apart, or a replayed request)");
        }
        Caller caller;
        try {
            caller = json.readValue(Base64.getUrlDecoder().decode(encoded), Caller.class);
        } catch (RuntimeException e) {
            throw new ForbiddenException("the forwarded caller cannot be read: " + e.getMessage());
        }
        return new Signed(caller, at, nonce);
    }

    /**
     * Takes the nonce of a call {@link #verify} passed: each once, in its sender's replay window.
     *
     * @throws NonceRefusedException when it was taken already (the call was accepted here before, this is a replay), or
     *     it is below its sender's window (too old to tell: the sender may sign the call again)
     * @throws TooManyRequestsException when it is a new sender's and this node keeps the windows of {@code
     *     kvstore.cluster.peer-senders} senders, all live: refused rather than one forgotten, which would let its
     *     calls be replayed
     * @throws ForbiddenException when its timestamp is out of the window by now
     */
    void take(Signed signed) {
        switch (seen.accept(signed.at(), signed.nonce(), clock.instant().getEpochSecond())) {
            case ACCEPTED -> {}
            case REPLAYED ->
                throw new NonceRefusedException(
                        "this signed call (" + NONCE + " " + signed.nonce() + ", signed at " + signed.at()
                                + ") was already accepted by this node: a captured call replayed, refused",
                        boot);
            case TOO_OLD ->
                throw new NonceRefusedException(
                        "this signed call (" + NONCE + " " + signed.nonce() + ") is older than the replay window of "
                                + "its sender: " + SeenNonces.WINDOW + " later calls of the sending node reached "
                                + "this node first, so it cannot be told from a replay; sign it again (a new nonce)",
                        boot);
            case FULL ->
                throw new TooManyRequestsException("this node keeps the replay windows of " + capacity + " sending "
                        + "processes (kvstore.cluster.peer-senders), each with a call accepted in the last "
                        + seen.idleSeconds() + " s, and takes no new sender until one is idle that long: forgetting a "
                        + "live one would let its calls be replayed");
            case EXPIRED ->
                throw new ForbiddenException("the forwarded caller's signature is more than " + MAX_SKEW_SECONDS
                        + " s old or ahead (clocks of the nodes apart, or a replayed request)");
        }
    }

    /**
     * The path a signature covers: the request's path below this node's servlet context path, still encoded, as
     * the calling node signed it (the path of its call below the address this node registered, which ends with
     * that context path). Not the whole request URI: under a context path no signed call would match it.
     */
    static String signedPath(HttpServletRequest request) {
        String uri = request.getRequestURI();
        String context = request.getContextPath();
        return context != null && !context.isEmpty() && uri.startsWith(context) ? uri.substring(context.length()) : uri;
    }

    private byte[] mac(
            long at,
            String method,
            String path,
            String caller,
            String body,
            String target,
            String from,
            String nonce,
            String run) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(java.util.Objects.requireNonNull(secret), "HmacSHA256"));
            return mac.doFinal((at + "\n" + method + "\n" + path + "\n" + caller + "\n" + body + "\n" + target + "\n"
                            + from + "\n" + nonce + "\n" + run)
                    .getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException(e);
        }
    }
}
