package io.kvstore.service.error;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Holds every request body to {@code kvstore.max-request-size}: a declared length over it is answered
 * 413 before a byte is read; a chunked body is cut off when it passes the limit, and the read fails with
 * {@link PayloadTooLargeException}, which the error advice also answers 413. Bodies other than block
 * batches ({@code application/octet-stream}) are JSON parsed on the heap and held to the much smaller
 * {@code kvstore.limits.max-json-body}, so a huge JSON lookup is refused at once instead of filling the heap.
 */
public final class BodySizeLimitFilter extends OncePerRequestFilter implements org.springframework.core.Ordered {

    private final long maxBlockBody;
    private final long maxJsonBody;

    public BodySizeLimitFilter(long maxBlockBody, long maxJsonBody) {
        this.maxBlockBody = maxBlockBody;
        this.maxJsonBody = Math.min(maxJsonBody, maxBlockBody);
    }

    /** After the framework's filters, and before the one that checks a peer's body (which reads it whole). */
    @Override
    public int getOrder() {
        return LOWEST_PRECEDENCE - 1;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        long declared = request.getContentLengthLong();
        String type = request.getContentType();
        boolean blocks = type != null && type.toLowerCase(java.util.Locale.ROOT).startsWith("application/octet-stream");
        long maxBytes = blocks ? maxBlockBody : maxJsonBody;
        String setting = blocks ? "kvstore.max-request-size" : "kvstore.limits.max-json-body";
        if (declared > maxBytes) {
            String detail = "the request body has " + declared + " bytes; " + setting + " allows " + maxBytes;
            response.setStatus(413);
            response.setContentType("application/problem+json");
            response.getOutputStream()
                    .write(("{\"type\":\"about:blank\",\"title\":\"Request body too large\",\"status\":413,"
                                    + "\"detail\":\"" + detail + "\",\"instance\":\""
                                    + request.getRequestURI().replace("\"", "%22") + "\"}")
                            .getBytes(StandardCharsets.UTF_8));
            return;
        }
        chain.doFilter(declared >= 0 ? request : new Limited(request, maxBytes, setting), response);
    }

    /** A request whose body stream fails once more than the limit has been read. */
    private static final class Limited extends HttpServletRequestWrapper {

        private final long maxBytes;
        private final String setting;
        private ServletInputStream stream;

        Limited(HttpServletRequest request, long maxBytes, String setting) {
            super(request);
            this.maxBytes = maxBytes;
            this.setting = setting;
        }

        @Override
        public ServletInputStream getInputStream() throws IOException {
            if (stream == null) {
                ServletInputStream in = super.getInputStream();
                stream = new ServletInputStream() {
                    private long read;

                    @Override
                    public int read() throws IOException {
                        int b = in.read();
                        if (b >= 0) {
                            count(1);
                        }
                        return b;
                    }

                    @Override
                    public int read(byte[] buffer, int offset, int length) throws IOException {
                        int n = in.read(buffer, offset, length);
                        if (n > 0) {
                            count(n);
                        }
                        return n;
                    }

                    @Override
                    public int read(java.nio.ByteBuffer buffer) throws IOException {
                        // passed through: the default would read via a fresh heap array as large as the buffer
                        int n = in.read(buffer);
                        if (n > 0) {
                            count(n);
                        }
                        return n;
                    }

                    private void count(int n) {
                        read += n;
                        if (read > maxBytes) {
                            throw new PayloadTooLargeException(
                                    "the request body passed " + setting + " (" + maxBytes + " bytes)");
                        }
                    }

                    @Override
                    public boolean isFinished() {
                        return in.isFinished();
                    }

                    @Override
                    public boolean isReady() {
                        return in.isReady();
                    }

                    @Override
                    public void setReadListener(ReadListener listener) {
                        in.setReadListener(listener);
                    }
                };
            }
            return stream;
        }
    }
}
