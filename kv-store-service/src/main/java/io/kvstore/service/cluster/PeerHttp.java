package io.kvstore.service.cluster;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A lean HTTP/1.1 client for the calls on a cluster lookup's latency path (probes): keep-alive sockets to
 * one peer, pooled, and blocking I/O on the calling thread. A lookup writes its probes to every peer
 * first and then reads the answers, so an answer wakes the lookup's own (virtual) thread directly; the
 * JDK's {@code HttpClient} would hand each answer from its selector thread to an executor and then to the
 * waiting thread, and spend more time per call on proxies, headers and futures than the peer spends
 * answering a probe. It speaks only what the peer's Tomcat answers: a status line, headers, a body by
 * {@code Content-Length} or chunked, and {@code Connection: close}.
 *
 * <p>Failures are those of the JDK client: an {@link IOException} when the peer cannot be connected to,
 * drops the connection, or does not answer within the timeout (a watchdog closes the socket at the deadline,
 * so a stalled write or read ends too). A pooled connection the peer closed while idle fails on reuse
 * before any answer arrived; the call is then sent once more on a new connection, with headers made anew
 * ({@code headers} is asked again): the peer may have read the first request whole before it closed, and a
 * signed call's nonce is taken once, so the same signed headers sent again would be refused (409) as a replay.
 */
final class PeerHttp {

    /** Idle connections older than this are closed rather than reused (the peer keeps them 60 s). */
    private static final long MAX_IDLE_NANOS = TimeUnit.SECONDS.toNanos(30);

    private static final int MAX_IDLE_CONNECTIONS = 64;
    private static final int MAX_HEADER_BYTES = 64 * 1024;

    /** Closes sockets whose exchange ran past its deadline; one daemon thread for every peer. */
    private static final ScheduledExecutorService WATCHDOG = watchdog();

    private final String host;
    private final int port;
    private final String hostHeader;
    private final String basePath;
    private final Duration timeout;
    private final ConcurrentLinkedDeque<Connection> idle = new ConcurrentLinkedDeque<>();
    private volatile boolean closed;

    /**
     * A client for the peer at {@code address}, or null when the address is not a plain {@code
     * http://host:port[/path]} URL (an {@code https} peer is called with the JDK's client instead).
     */
    static PeerHttp of(String address, Duration timeout) {
        try {
            URI uri = URI.create(address);
            return "http".equalsIgnoreCase(uri.getScheme()) && uri.getHost() != null
                    ? new PeerHttp(uri, timeout)
                    : null;
        } catch (IllegalArgumentException notAUri) {
            return null;
        }
    }

    private PeerHttp(URI uri, Duration timeout) {
        this.host = uri.getHost();
        this.port = uri.getPort() < 0 ? 80 : uri.getPort();
        this.hostHeader = uri.getPort() < 0 ? host : host + ":" + port;
        String path = uri.getRawPath() == null ? "" : uri.getRawPath();
        this.basePath = path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
        this.timeout = timeout;
    }

    /** An answer: its status and body. */
    record Response(int status, byte[] body) {}

    /**
     * Sends a request and returns without waiting for its answer; {@link Call#answer} reads it. {@code
     * path} is below the peer's address and already encoded. {@code headers} is asked once for each time the
     * request is written: a request sent again (on a new connection, for one the peer had closed) carries
     * headers made anew, so a signed call is signed again, with another nonce.
     */
    Call send(String method, String path, Supplier<Map<String, String>> headers, String contentType, byte[] body)
            throws IOException {
        Call call = new Call(
                () -> encode(method, path, headers.get(), contentType, body), System.nanoTime() + timeout.toNanos());
        call.start();
        return call;
    }

    /** A request sent and not yet answered; its connection is this call's until {@link #answer}. */
    final class Call {
        /** The request's bytes, made anew for every attempt (its headers signed again). */
        private final Supplier<byte[]> request;

        private final long deadline;
        private Connection connection;
        private boolean reused;

        private Call(Supplier<byte[]> request, long deadline) {
            this.request = request;
            this.deadline = deadline;
        }

        private void start() throws IOException {
            Connection pooled = takeIdle();
            if (pooled != null) {
                connection = pooled;
                reused = true;
                try {
                    connection.write(request.get(), deadline);
                    return;
                } catch (IOException stale) {
                    connection.close();
                }
            }
            connection = open(deadline);
            reused = false;
            connection.write(request.get(), deadline);
        }

        /** Waits for the answer (until the deadline); the connection goes back to the pool when it can. */
        Response answer() throws IOException {
            try {
                Response response;
                try {
                    response = connection.read(deadline);
                } catch (StaleConnectionException stale) {
                    if (!reused) {
                        throw stale;
                    }
                    // the peer closed the idle connection, before this request reached it or after it read it
                    // whole (and took its nonce): send it again, signed again
                    connection.close();
                    connection = open(deadline);
                    reused = false;
                    connection.write(request.get(), deadline);
                    response = connection.read(deadline);
                }
                if (connection.reusable) {
                    release(connection);
                } else {
                    connection.close();
                }
                connection = null;
                return response;
            } catch (IOException | RuntimeException e) {
                if (connection != null) {
                    connection.close();
                }
                throw e;
            }
        }
    }

    private Connection takeIdle() {
        long now = System.nanoTime();
        Connection c;
        while ((c = idle.pollFirst()) != null) {
            if (now - c.idleSince < MAX_IDLE_NANOS) {
                return c;
            }
            c.close();
        }
        return null;
    }

    private void release(Connection c) {
        c.idleSince = System.nanoTime();
        if (!closed && idle.size() < MAX_IDLE_CONNECTIONS) {
            idle.addFirst(c);
            if (closed) {
                closeIdle();
            }
        } else {
            c.close();
        }
    }

    /**
     * Closes the pooled connections, and each call's connection when it ends: the peer left this address
     * (it came back at another) or this node shuts down. A call still in flight is answered.
     */
    void close() {
        closed = true;
        closeIdle();
    }

    private void closeIdle() {
        Connection c;
        while ((c = idle.pollFirst()) != null) {
            c.close();
        }
    }

    private Connection open(long deadline) throws IOException {
        long left = remainingMillis(deadline);
        Socket socket = new Socket();
        try {
            socket.setTcpNoDelay(true);
            socket.connect(new InetSocketAddress(host, port), (int) left);
        } catch (SocketTimeoutException e) {
            socket.close();
            throw new SocketTimeoutException("connecting to " + hostHeader + " took longer than " + timeout);
        } catch (IOException e) {
            socket.close();
            throw e;
        }
        return new Connection(socket);
    }

    private long remainingMillis(long deadline) throws SocketTimeoutException {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            throw new SocketTimeoutException("no answer from " + hostHeader + " within " + timeout);
        }
        return left;
    }

    private byte[] encode(String method, String path, Map<String, String> headers, String contentType, byte[] body) {
        StringBuilder head = new StringBuilder(256)
                .append(method)
                .append(' ')
                .append(basePath)
                .append(path)
                .append(" HTTP/1.1\r\nHost: ")
                .append(hostHeader)
                .append("\r\nContent-Type: ")
                .append(contentType)
                .append("\r\nContent-Length: ")
                .append(body.length)
                .append("\r\n");
        headers.forEach((name, value) -> {
            if (name.indexOf('\r') >= 0
                    || name.indexOf('\n') >= 0
                    || value.indexOf('\r') >= 0
                    || value.indexOf('\n') >= 0) {
                throw new IllegalArgumentException("header " + name + " holds a line break");
            }
            head.append(name).append(": ").append(value).append("\r\n");
        });
        head.append("\r\n");
        byte[] start = head.toString().getBytes(StandardCharsets.ISO_8859_1);
        byte[] out = new byte[start.length + body.length];
        System.arraycopy(start, 0, out, 0, start.length);
        System.arraycopy(body, 0, out, start.length, body.length);
        return out;
    }

    /** The peer closed the connection before any byte of the answer: on a reused connection, send again. */
    private static final class StaleConnectionException extends EOFException {
        StaleConnectionException(String message) {
            super(message);
        }
    }

    /** One keep-alive socket. */
    private final class Connection {
        private final Socket socket;
        private final InputStream in;
        private final OutputStream out;
        private long idleSince;
        private boolean reusable = true;

        Connection(Socket socket) throws IOException {
            this.socket = socket;
            this.in = new BufferedInputStream(socket.getInputStream(), 16 * 1024);
            this.out = socket.getOutputStream();
        }

        void write(byte[] request, long deadline) throws IOException {
            remainingMillis(deadline);
            ScheduledFuture<?> guard = watch(deadline);
            try {
                out.write(request);
            } catch (IOException e) {
                throw timedOut(guard, deadline) ? timedOut() : e;
            } finally {
                guard.cancel(false);
            }
        }

        Response read(long deadline) throws IOException {
            socket.setSoTimeout((int) remainingMillis(deadline));
            ScheduledFuture<?> guard = watch(deadline);
            try {
                return readResponse();
            } catch (IOException e) {
                // the watchdog closed the socket, or the socket's own read timeout ran out
                throw timedOut(guard, deadline) || e instanceof SocketTimeoutException ? timedOut() : e;
            } finally {
                guard.cancel(false);
            }
        }

        /**
         * Whether the watchdog closed the socket: its task done, or the deadline passed (the task may still be
         * running when the closed socket fails the read, and is not done yet then).
         */
        private static boolean timedOut(ScheduledFuture<?> guard, long deadline) {
            return guard.isDone() || System.nanoTime() - deadline >= 0;
        }

        private SocketTimeoutException timedOut() {
            reusable = false;
            return new SocketTimeoutException("no answer from " + hostHeader + " within " + timeout);
        }

        /** Closes the socket at the deadline unless cancelled (a blocked write has no timeout of its own). */
        private ScheduledFuture<?> watch(long deadline) {
            return WATCHDOG.schedule(this::close, deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        private Response readResponse() throws IOException {
            int first;
            try {
                first = in.read();
            } catch (SocketException reset) {
                throw new StaleConnectionException("connection to " + hostHeader + " reset: " + reset.getMessage());
            }
            if (first < 0) {
                throw new StaleConnectionException("connection to " + hostHeader + " closed before an answer");
            }
            String statusLine = line(first);
            // "HTTP/1.1 200" and an optional reason phrase
            if (!statusLine.startsWith("HTTP/1.") || statusLine.length() < 12) {
                throw new IOException("not an HTTP answer from " + hostHeader + ": " + statusLine);
            }
            int status;
            try {
                status = Integer.parseInt(statusLine.substring(9, 12));
            } catch (NumberFormatException e) {
                throw new IOException("not an HTTP status from " + hostHeader + ": " + statusLine, e);
            }
            long length = -1;
            boolean chunked = false;
            boolean close = statusLine.startsWith("HTTP/1.0");
            int headerBytes = statusLine.length();
            for (String header = line(in.read()); !header.isEmpty(); header = line(in.read())) {
                headerBytes += header.length();
                if (headerBytes > MAX_HEADER_BYTES) {
                    throw new IOException(
                            "answer headers from " + hostHeader + " exceed " + MAX_HEADER_BYTES + " bytes");
                }
                int colon = header.indexOf(':');
                if (colon <= 0) {
                    continue;
                }
                String name = header.substring(0, colon).trim();
                String value = header.substring(colon + 1).trim();
                if (name.equalsIgnoreCase("Content-Length")) {
                    try {
                        length = Long.parseLong(value);
                    } catch (NumberFormatException e) {
                        throw new IOException("bad Content-Length from " + hostHeader + ": " + value, e);
                    }
                } else if (name.equalsIgnoreCase("Transfer-Encoding")) {
                    chunked = value.toLowerCase(java.util.Locale.ROOT).endsWith("chunked");
                } else if (name.equalsIgnoreCase("Connection")) {
                    close = value.equalsIgnoreCase("close");
                }
            }
            byte[] body;
            if (chunked) {
                body = readChunked();
            } else if (length >= 0) {
                if (length > Integer.MAX_VALUE - 8) {
                    throw new IOException("an answer of " + length + " bytes from " + hostHeader + " is too large");
                }
                body = in.readNBytes((int) length);
                if (body.length < length) {
                    throw new EOFException("connection to " + hostHeader + " closed inside an answer");
                }
            } else if (status == 204 || status == 304 || status / 100 == 1) {
                body = new byte[0];
            } else {
                // no length: the body ends with the connection
                body = in.readAllBytes();
                close = true;
            }
            reusable = !close;
            return new Response(status, body);
        }

        private byte[] readChunked() throws IOException {
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            while (true) {
                String size = line(in.read());
                int semicolon = size.indexOf(';');
                int n;
                try {
                    n = Integer.parseInt((semicolon < 0 ? size : size.substring(0, semicolon)).trim(), 16);
                } catch (NumberFormatException e) {
                    throw new IOException("bad chunk size from " + hostHeader + ": " + size, e);
                }
                if (n == 0) {
                    // trailers, then the empty line
                    while (!line(in.read()).isEmpty()) {
                        // ignored
                    }
                    return body.toByteArray();
                }
                byte[] chunk = in.readNBytes(n);
                if (chunk.length < n) {
                    throw new EOFException("connection to " + hostHeader + " closed inside a chunk");
                }
                body.write(chunk);
                line(in.read());
            }
        }

        /** One line (without CR LF) whose first byte is {@code first}. */
        private String line(int first) throws IOException {
            StringBuilder s = new StringBuilder(64);
            int b = first;
            while (true) {
                if (b < 0) {
                    throw new EOFException("connection to " + hostHeader + " closed inside an answer's head");
                }
                if (b == '\n') {
                    break;
                }
                if (b != '\r') {
                    if (s.length() >= MAX_HEADER_BYTES) {
                        throw new IOException("an answer line from " + hostHeader + " is too long");
                    }
                    s.append((char) b);
                }
                b = in.read();
            }
            return s.toString();
        }

        void close() {
            reusable = false;
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing is all that is left to do
            }
        }
    }

    private static ScheduledExecutorService watchdog() {
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(
                1, Thread.ofPlatform().daemon().name("kvstore-peer-watchdog").factory());
        executor.setRemoveOnCancelPolicy(true);
        return Executors.unconfigurableScheduledExecutorService(executor);
    }
}
