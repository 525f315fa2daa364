package io.kvstore.service.web;

import java.nio.charset.StandardCharsets;
import org.springframework.http.HttpStatus;

/** Problem JSON written by hand where Spring is not involved (the container's own rejections). */
final class ContainerProblems {

    private ContainerProblems() {}

    static String detail(int status, String message) {
        String base = switch (status) {
            case 400 ->
                "the HTTP server rejected the request: a malformed request line, an encoded '/', '\\\\' or "
                        + "NUL in the path, or an invalid header";
            case 404 -> "no such resource";
            case 405 -> "method not allowed here";
            case 408 -> "the request did not arrive in time";
            case 413 -> "the request is too large";
            case 431 -> "the request's headers are too large";
            case 501 -> "the HTTP method is not implemented";
            case 505 -> "the HTTP version is not supported";
            default -> "the HTTP server rejected the request";
        };
        return message == null || message.isBlank() ? base : base + " (" + message + ")";
    }

    static byte[] json(int status, String detail) {
        HttpStatus known = HttpStatus.resolve(status);
        String title = known == null ? "Error" : known.getReasonPhrase();
        return ("{\"type\":\"about:blank\",\"title\":\"" + escape(title) + "\",\"status\":" + status + ",\"detail\":\""
                        + escape(detail) + "\"}")
                .getBytes(StandardCharsets.UTF_8);
    }

    /** A request path safe to echo: percent-encoded wherever it is not plain. */
    static String safePath(String path) {
        StringBuilder out = new StringBuilder();
        for (byte b : path.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xFF;
            if (c > 0x20 && c < 0x7F && c != '"' && c != '\\' && c != '%' && c != '<' && c != '>') {
                out.append((char) c);
            } else {
                out.append('%').append(String.format("%02X", c));
            }
        }
        return out.toString();
    }

    static String escape(String s) {
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
