package io.kvstore.service.error;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes an RFC 9457 problem straight to a servlet response, for code that answers before or outside Spring
 * MVC (a filter, a plain servlet) and so cannot throw to {@link ProblemAdvice}: the same fields it answers.
 */
public final class ServletProblems {

    private ServletProblems() {}

    /** @param field the input at fault, or null when there is none */
    public static void write(
            HttpServletRequest request,
            HttpServletResponse response,
            JsonMapper json,
            int status,
            String title,
            String detail,
            @Nullable Object field)
            throws IOException {
        write(request, response, json, status, title, detail, field, "about:blank", Map.of());
    }

    /**
     * As {@link #write(HttpServletRequest, HttpServletResponse, JsonMapper, int, String, String, Object)}, of
     * problem type {@code type} and with the members {@code extra} too.
     */
    public static void write(
            HttpServletRequest request,
            HttpServletResponse response,
            JsonMapper json,
            int status,
            String title,
            String detail,
            @Nullable Object field,
            String type,
            Map<String, ?> extra)
            throws IOException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("type", type);
        body.put("title", title);
        body.put("status", status);
        body.put("detail", detail);
        body.put("instance", request.getRequestURI());
        if (field != null) {
            body.put("field", field);
        }
        body.putAll(extra);
        byte[] bytes = json.writeValueAsBytes(body);
        response.setStatus(status);
        response.setContentType("application/problem+json");
        response.setContentLength(bytes.length);
        response.getOutputStream().write(bytes);
    }
}
