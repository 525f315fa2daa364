package io.kvstore.service.security;

import io.kvstore.service.error.ForbiddenException;
import io.kvstore.service.error.UnauthorizedException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.net.InetAddress;
import org.springframework.http.HttpHeaders;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Decides who is calling the engine API ({@code /v1/**}) and leaves it as {@link Caller#ATTRIBUTE}.
 * With tokens: no bearer token is 401, an unknown one 403. Without any token the service is in
 * protected mode, as Redis is: loopback clients act as {@link Caller#LOCAL}, everyone else gets 403
 * saying how to configure tokens. Refusals are exceptions, answered as problem JSON by the error advice.
 */
final class ApiAuthInterceptor implements HandlerInterceptor {

    private final TokenStore tokens;

    ApiAuthInterceptor(TokenStore tokens) {
        this.tokens = tokens;
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
        request.setAttribute(Caller.ATTRIBUTE, caller(request));
        return true;
    }

    private Caller caller(HttpServletRequest request) {
        if (tokens.empty()) {
            if (loopback(request.getRemoteAddr())) {
                return Caller.LOCAL;
            }
            throw new ForbiddenException("kvstore runs in protected mode (no API tokens configured): the engine API "
                    + "answers loopback clients only; configure kvstore.tokens or issue one with POST /admin/tokens");
        }
        String header = request.getHeader(HttpHeaders.AUTHORIZATION);
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            throw new UnauthorizedException("the engine API needs 'Authorization: Bearer <token>'");
        }
        Caller caller = tokens.authenticate(header.substring(7).trim());
        if (caller == null) {
            throw new ForbiddenException("the bearer token is not a valid API token");
        }
        return caller;
    }

    static boolean loopback(String address) {
        try {
            return address != null && InetAddress.ofLiteral(address).isLoopbackAddress();
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
