package io.kvstore.service.security;

import io.kvstore.service.error.ForbiddenException;
import io.kvstore.service.error.UnauthorizedException;
import jakarta.servlet.http.HttpServletRequest;
import java.net.InetAddress;
import org.springframework.http.HttpHeaders;

/**
 * Decides who is calling the engine API: a cluster peer's call carries the caller the first node
 * authenticated, signed with the cluster secret ({@link PeerCredentials}). Otherwise, with tokens: no bearer
 * token is 401, an unknown one 403. Without any engine token the service is in protected mode, as Redis is:
 * loopback clients act as {@link Caller#LOCAL}, everyone else gets 403 saying how to configure tokens.
 * Refusals are exceptions, answered as problem JSON. One rule for Spring MVC's {@code /v1} handlers ({@link
 * ApiAuthInterceptor}) and for the servlets that answer engine-API calls outside it (the cluster's probe).
 */
public final class EngineCallers {

    private final TokenStore tokens;
    private final PeerCredentials peers;

    public EngineCallers(TokenStore tokens, PeerCredentials peers) {
        this.tokens = tokens;
        this.peers = peers;
    }

    /** The caller of {@code request}, or an exception that refuses it (401 or 403). */
    public Caller of(HttpServletRequest request) {
        Caller forwarded = peers.forwarded(request);
        if (forwarded != null) {
            return forwarded;
        }
        if (tokens.protectedMode()) {
            if (loopback(request.getRemoteAddr())) {
                return Caller.LOCAL;
            }
            throw new ForbiddenException("kvstore runs in protected mode (no API tokens configured): the engine API "
                    + "answers loopback clients only; configure kvstore.tokens or issue one with POST /admin/tokens");
        }
        return bearer(request, tokens, "the engine API needs 'Authorization: Bearer <token>'");
    }

    /** The caller of a request's bearer token: 401 without one, 403 when it is no known token. */
    static Caller bearer(HttpServletRequest request, TokenStore tokens, String missing) {
        String header = request.getHeader(HttpHeaders.AUTHORIZATION);
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            throw new UnauthorizedException(missing);
        }
        return tokens.requireBearer(header.substring(7), missing);
    }

    static boolean loopback(String address) {
        try {
            return address != null && InetAddress.ofLiteral(address).isLoopbackAddress();
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
