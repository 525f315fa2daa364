package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Requests the servlet container rejects itself, before any handler, answer RFC 9457 problem JSON like
 * the rest of the API: never Tomcat's HTML page, never Spring Boot's {@code {"timestamp",...}} body.
 * Sent on raw sockets, since HTTP clients refuse to send most of them.
 */
class ContainerErrorsTest extends ServiceTest {

    private String raw(String request) throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(20_000);
            s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            var buf = new ByteArrayOutputStream();
            byte[] b = new byte[8192];
            int n;
            try {
                while ((n = s.getInputStream().read(b)) > 0) {
                    buf.write(b, 0, n);
                }
            } catch (java.net.SocketException reset) {
                // closed after the answer
            }
            return buf.toString(StandardCharsets.ISO_8859_1);
        }
    }

    private static void assertProblem(String answer, int status) {
        assertThat(answer).startsWith("HTTP/1.1 " + status);
        assertThat(answer.toLowerCase(java.util.Locale.ROOT)).contains("content-type: application/problem+json");
        assertThat(answer).contains("\"status\":" + status).doesNotContain("<html", "timestamp", "Apache Tomcat");
    }

    @Test
    void anEncodedSlashInThePathIsProblemJson() throws Exception {
        assertProblem(
                raw("GET /v1/namespaces/..%2F..%2Fetc%2Fpasswd HTTP/1.1\r\nHost: kvstore\r\nConnection: close\r\n\r\n"),
                400);
    }

    @Test
    void anEncodedNulInThePathIsProblemJson() throws Exception {
        assertProblem(raw("GET /v1/namespaces/a%00b HTTP/1.1\r\nHost: kvstore\r\nConnection: close\r\n\r\n"), 400);
    }

    @Test
    void aHeaderTooLargeIsProblemJson() throws Exception {
        String answer = raw("GET /v1/namespaces HTTP/1.1\r\nHost: kvstore\r\nAuthorization: Bearer "
                + "x".repeat(10_240) + "\r\nConnection: close\r\n\r\n");
        assertThat(answer).matches("(?s)HTTP/1.1 (400|431).*");
        int status = Integer.parseInt(answer.substring(9, 12));
        assertProblem(answer, status);
    }

    @Test
    void aMalformedMethodIsProblemJson() throws Exception {
        assertProblem(raw("G{T /v1/namespaces HTTP/1.1\r\nHost: kvstore\r\nConnection: close\r\n\r\n"), 400);
    }

    @Test
    void anUnknownMethodIsProblemJson() throws Exception {
        String answer = raw("BREW /v1/namespaces HTTP/1.1\r\nHost: kvstore\r\nConnection: close\r\n\r\n");
        int status = Integer.parseInt(answer.substring(9, 12));
        assertThat(status).isIn(405, 501);
        assertProblem(answer, status);
    }
}
