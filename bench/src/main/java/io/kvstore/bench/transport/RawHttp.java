package io.kvstore.bench.transport;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A minimal HTTP/1.1 client over a plain socket, kept alive, one per client thread: the HTTP side of
 * {@link HttpLoad} on equal terms with its RESP client for Redis (the JDK's HttpClient delivers a large
 * response through a chain of small buffers and was the bottleneck of the measurement, not the server).
 */
final class RawHttp implements AutoCloseable {

    private static final ThreadLocal<RawHttp> LOCAL = new ThreadLocal<>();
    private static final Queue<RawHttp> OPEN = new ConcurrentLinkedQueue<>();

    /** A response whose body is still on the socket; {@link #body} must be read to the end before the next request. */
    record Response(int status, long length, InputStream body) {}

    private final String host;
    private final Socket socket;
    private final OutputStream out;
    private final InputStream in;

    private RawHttp(URI base) throws IOException {
        host = base.getHost() + ":" + base.getPort();
        socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.setReceiveBufferSize(1 << 20);
        socket.setSendBufferSize(1 << 20);
        socket.connect(new InetSocketAddress(base.getHost(), base.getPort()));
        out = new BufferedOutputStream(socket.getOutputStream(), 64 * 1024);
        in = new BufferedInputStream(socket.getInputStream(), 256 * 1024);
    }

    /** This thread's connection to {@code base}, opened on first use and kept until {@link #closeAll}. */
    static RawHttp local(String base) throws IOException {
        RawHttp c = LOCAL.get();
        if (c == null || c.socket.isClosed()) {
            c = new RawHttp(URI.create(base));
            LOCAL.set(c);
            OPEN.add(c);
        }
        return c;
    }

    static void closeAll() {
        RawHttp c;
        while ((c = OPEN.poll()) != null) {
            c.close();
        }
    }

    /** Sends a request whose body is {@code parts} back to back (none for no body) and reads the response head. */
    Response send(String method, String path, String contentType, List<byte[]> parts) throws IOException {
        return send(method, path, contentType, "", parts);
    }

    /** {@link #send(String, String, String, List)} with more header lines ({@code "Name: value\r\n"} each). */
    Response send(String method, String path, String contentType, String headers, List<byte[]> parts)
            throws IOException {
        long length = 0;
        for (byte[] p : parts) {
            length += p.length;
        }
        StringBuilder head = new StringBuilder(method)
                .append(' ')
                .append(path)
                .append(" HTTP/1.1\r\nHost: ")
                .append(host)
                .append("\r\nContent-Length: ")
                .append(length)
                .append("\r\n");
        if (contentType != null) {
            head.append("Content-Type: ").append(contentType).append("\r\n");
        }
        out.write(head.append(headers).append("\r\n").toString().getBytes(StandardCharsets.US_ASCII));
        for (byte[] p : parts) {
            out.write(p);
        }
        out.flush();
        String status = line();
        int code = Integer.parseInt(status.substring(9, 12));
        long contentLength = -1;
        boolean chunked = false;
        boolean close = false;
        String h;
        while (!(h = line()).isEmpty()) {
            String lower = h.toLowerCase();
            if (lower.startsWith("content-length:")) {
                contentLength = Long.parseLong(h.substring(15).trim());
            } else if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
                chunked = true;
            } else if (lower.startsWith("connection:") && lower.contains("close")) {
                close = true; // Tomcat ends a keep-alive connection after maxKeepAliveRequests
            }
        }
        if (chunked && !close) {
            // streamed as the caller reads it, no copy of the whole body (a fetch answer is 16 MiB)
            return new Response(code, -1, new Dechunked());
        }
        if (chunked) {
            // the last answer on this connection: read whole before the socket is dropped
            byte[] b = new Dechunked().readAllBytes();
            close();
            return new Response(code, b.length, new java.io.ByteArrayInputStream(b));
        }
        if (close) {
            // the caller reads the body from the buffered stream; the socket is dropped for the next request
            byte[] b = contentLength > 0 ? in.readNBytes((int) contentLength) : new byte[0];
            close();
            return new Response(code, b.length, new java.io.ByteArrayInputStream(b));
        }
        return new Response(code, contentLength, in);
    }

    /** The whole response body as text (for JSON answers). */
    String text(Response r) throws IOException {
        if (r.body() instanceof Dechunked chunked) {
            return new String(chunked.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (r.length() <= 0) {
            return ""; // 204, or an empty body
        }
        return new String(r.body().readNBytes((int) r.length()), StandardCharsets.UTF_8);
    }

    /**
     * A chunked body read from the socket as the caller asks for it; ends (-1) after the last chunk and its
     * trailer, so a caller that reads to the end leaves the connection at the next response.
     */
    private final class Dechunked extends InputStream {
        private long left; // bytes left in the current chunk
        private boolean ended;

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (left == 0 && !next()) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n < 0) {
                throw new IOException("connection closed inside a chunk");
            }
            left -= n;
            return n;
        }

        /** Moves to the next chunk; false at the end of the body. */
        private boolean next() throws IOException {
            if (ended) {
                return false;
            }
            String size = line();
            if (size.isEmpty()) {
                size = line(); // the CRLF that ends the chunk before
            }
            int semicolon = size.indexOf(';');
            left = Long.parseLong((semicolon < 0 ? size : size.substring(0, semicolon)).trim(), 16);
            if (left == 0) {
                while (!line().isEmpty()) {
                    // trailer fields
                }
                ended = true;
                return false;
            }
            return true;
        }
    }

    private String line() throws IOException {
        StringBuilder s = new StringBuilder();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new IOException("connection closed by the server");
            }
            if (c != '\r') {
                s.append((char) c);
            }
        }
        return s.toString();
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing a bench connection
        }
    }
}
