package io.kvstore.service.admin;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Guards {@code /admin/**} with the bearer token of {@code kvstore.admin-token}: no token is 401, a wrong
 * one 403 (compared in constant time). When no token is configured every admin call is refused with 403,
 * so an unconfigured service never exposes eviction or pinning.
 */
public final class AdminTokenInterceptor implements HandlerInterceptor {

    private final byte[] token;

    public AdminTokenInterceptor(String token) {
        this.token = token == null || token.isBlank() ? null : token.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler)
            throws IOException {
        String header = request.getHeader(HttpHeaders.AUTHORIZATION);
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            response.setHeader(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"kvstore-admin\"");
            refuse(response, 401, "Unauthorized", "the admin API needs 'Authorization: Bearer <kvstore.admin-token>'");
            return false;
        }
        if (token == null) {
            refuse(response, 403, "Forbidden", "the admin API is disabled: kvstore.admin-token is not set");
            return false;
        }
        byte[] given = header.substring(7).trim().getBytes(StandardCharsets.UTF_8);
        if (!MessageDigest.isEqual(given, token)) {
            refuse(response, 403, "Forbidden", "the bearer token is not the admin token");
            return false;
        }
        return true;
    }

    private static void refuse(HttpServletResponse response, int status, String title, String detail)
            throws IOException {
        response.setStatus(status);
        response.setContentType(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
        response.setCharacterEncoding("UTF-8");
        response.getWriter()
                .write("{\"type\":\"about:blank\",\"title\":\"" + title + "\",\"status\":" + status + ",\"detail\":\""
                        + detail.replace("\"", "'") + "\"}");
    }
}
