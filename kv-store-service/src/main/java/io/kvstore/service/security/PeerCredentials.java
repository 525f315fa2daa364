package io.kvstore.service.security;

import io.kvstore.service.error.ForbiddenException;
import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Map;
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
 * path, caller and body, at its one node, within {@link #MAX_SKEW_SECONDS} of its timestamp. The path is the call's
 * below the node's registered address, checked below the peer's servlet context path ({@link #signedPath}), so nodes
 * served under {@code server.servlet.context-path} verify what their peers signed.
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
 */
public final class PeerCredentials {

    /** The forwarded caller, base64url JSON of {@link Caller}. */
    public static final String CALLER = "Kvstore-Caller";
    /**
     * {@code <unix seconds>.<hex HMAC-SHA256>} over timestamp, method, path, {@value #CALLER}, {@value #BODY},
     * {@value #TARGET} and {@value #FORWARDED}.
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

    static final long MAX_SKEW_SECONDS = 300;
    /** The request attribute holding a forwarded caller whose signature and body were verified. */
    static final String VERIFIED = PeerCredentials.class.getName() + ".verified";

    private final byte @Nullable [] secret;
    private final String node;
    private final JsonMapper json;
    private final Clock clock;

    /**
     * @param secret {@code kvstore.cluster.secret}; null or blank: none, no caller is forwarded or accepted
     * @param node this node's {@code kvstore.cluster.node-name} (empty when it has none): the only target whose
     *     calls it accepts, and the forwarding node its own signed calls name ({@value #FORWARDED})
     */
    public PeerCredentials(@Nullable String secret, String node, JsonMapper json, Clock clock) {
        this.secret = secret == null || secret.isBlank() ? null : secret.getBytes(StandardCharsets.UTF_8);
        this.node = node;
        this.json = json;
        this.clock = clock;
    }

    /** Whether {@code kvstore.cluster.secret} is set: only then are callers forwarded and accepted. */
    public boolean configured() {
        return secret != null;
    }

    /**
     * The five headers that carry {@code caller} on a call of {@code method} to {@code path} with {@code body}
     * (empty for a call without one) from this node to the node named {@code target} in the member set.
     */
    public Map<String, String> sign(String target, String method, String path, Caller caller, byte[] body) {
        String encoded = Base64.getUrlEncoder().withoutPadding().encodeToString(json.writeValueAsBytes(caller));
        String digest = digest(body);
        long now = clock.instant().getEpochSecond();
        return Map.of(
                CALLER,
                encoded,
                BODY,
                digest,
                TARGET,
                target,
                FORWARDED,
                node,
                SIGNATURE,
                now + "." + HexFormat.of().formatHex(mac(now, method, path, encoded, digest, target, node)));
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
     * The caller a peer forwarded on {@code request}, or null when the request forwards none.
     *
     * @throws ForbiddenException when it forwards one without a valid signature (unset secret, wrong secret,
     *     another request's signature, one signed for another node, or a stale one)
     */
    public @Nullable Caller forwarded(HttpServletRequest request) {
        if (request.getAttribute(VERIFIED) instanceof Caller verified) {
            return verified; // by PeerBodyFilter, body included
        }
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
        byte[] expected = mac(at, request.getMethod(), signedPath(request), encoded, digest, target, from);
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
        if (Math.abs(clock.instant().getEpochSecond() - at) > MAX_SKEW_SECONDS) {
            throw new ForbiddenException("the forwarded caller's signature is more than " + MAX_SKEW_SECONDS
                    + " s old or ahead (clocks of the nodes apart, or a replayed request)");
        }
        try {
            return json.readValue(Base64.getUrlDecoder().decode(encoded), Caller.class);
        } catch (RuntimeException e) {
            throw new ForbiddenException("the forwarded caller cannot be read: " + e.getMessage());
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

    private byte[] mac(long at, String method, String path, String caller, String body, String target, String from) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(java.util.Objects.requireNonNull(secret), "HmacSHA256"));
            return mac.doFinal(
                    (at + "\n" + method + "\n" + path + "\n" + caller + "\n" + body + "\n" + target + "\n" + from)
                            .getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException(e);
        }
    }
}
