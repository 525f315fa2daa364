package io.kvstore.service.security;

import io.kvstore.service.error.ForbiddenException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Guards {@code /admin/**} with the engine API's tokens: the caller needs a bearer token with the admin
 * role ({@code kvstore.tokens[n].admin}, {@code kvstore.admin-token}, or one issued with {@code "admin":
 * true}), or must be a cluster peer forwarding such a caller. No token is 401, an unknown token or one
 * without the role 403. With no admin token anywhere every admin call is refused, so an unconfigured
 * service never exposes eviction, pinning or token issue. Leaves the caller as {@link Caller#ATTRIBUTE}.
 */
final class AdminAuthInterceptor implements HandlerInterceptor {

    private final TokenStore tokens;
    private final PeerCredentials peers;

    AdminAuthInterceptor(TokenStore tokens, PeerCredentials peers) {
        this.tokens = tokens;
        this.peers = peers;
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
        Caller caller = peers.forwarded(request);
        if (caller == null) {
            caller = EngineCallers.bearer(
                    request,
                    tokens,
                    "the admin API needs 'Authorization: Bearer <token>' of a token with the admin role");
        }
        if (!caller.admin()) {
            throw new ForbiddenException("token " + caller.tokenId() + " of tenant '" + caller.tenant()
                    + "' does not have the admin role (kvstore.tokens[n].admin: true, or kvstore.admin-token)");
        }
        request.setAttribute(Caller.ATTRIBUTE, caller);
        return true;
    }
}
