package io.kvstore.bench.transport;

import io.kvstore.block.BlockHash;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A minimal RESP client for the Redis side of {@link HttpLoad}: pipelined SET and GET of whole blocks,
 * one connection per client thread, values written from and compared against the same arrays the
 * kvstore side uses.
 */
final class Redis implements AutoCloseable {

    private static final ThreadLocal<Redis> LOCAL = new ThreadLocal<>();
    private static final Queue<Redis> OPEN = new ConcurrentLinkedQueue<>();

    private final Socket socket;
    private final OutputStream out;
    private final InputStream in;

    Redis(int port) throws IOException {
        socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.connect(new InetSocketAddress("127.0.0.1", port));
        out = new BufferedOutputStream(socket.getOutputStream(), 64 * 1024);
        in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
    }

    /** This thread's connection, opened on first use and kept until {@link #closeAll}. */
    static Redis local(int port) throws IOException {
        Redis r = LOCAL.get();
        if (r == null || r.socket.isClosed()) {
            r = new Redis(port);
            LOCAL.set(r);
            OPEN.add(r);
        }
        return r;
    }

    static void closeAll() {
        Redis r;
        while ((r = OPEN.poll()) != null) {
            r.close();
        }
    }

    String command(String... words) throws IOException {
        writeArrayHeader(words.length);
        for (String w : words) {
            writeBulk(w.getBytes(StandardCharsets.UTF_8));
        }
        out.flush();
        return readLine();
    }

    /** SET of {@code count} blocks, pipelined: all commands, then all replies. */
    void set(List<BlockHash> keys, List<byte[]> values, int first, int count) throws IOException {
        for (int i = first; i < first + count; i++) {
            writeArrayHeader(3);
            writeBulk("SET".getBytes(StandardCharsets.US_ASCII));
            writeBulk(keys.get(i).toBytes());
            writeBulk(values.get(i));
        }
        out.flush();
        for (int i = 0; i < count; i++) {
            String reply = readLine();
            if (!reply.equals("+OK")) {
                throw new IOException("SET answered " + reply);
            }
        }
    }

    /** GET of {@code count} blocks, pipelined, each compared with what was stored. */
    void getAndCompare(List<BlockHash> keys, List<byte[]> values, int first, int count) throws IOException {
        for (int i = first; i < first + count; i++) {
            writeArrayHeader(2);
            writeBulk("GET".getBytes(StandardCharsets.US_ASCII));
            writeBulk(keys.get(i).toBytes());
        }
        out.flush();
        byte[] block = null;
        for (int i = first; i < first + count; i++) {
            String header = readLine();
            if (!header.startsWith("$")) {
                throw new IOException("GET answered " + header);
            }
            int length = Integer.parseInt(header.substring(1));
            if (block == null || block.length != length) {
                block = new byte[length];
            }
            if (in.readNBytes(block, 0, length) != length || in.read() != '\r' || in.read() != '\n') {
                throw new IOException("GET reply cut short");
            }
            if (!Arrays.equals(block, values.get(i))) {
                throw new IOException("block " + i + " came back different from Redis");
            }
        }
    }

    private void writeArrayHeader(int n) throws IOException {
        out.write(("*" + n + "\r\n").getBytes(StandardCharsets.US_ASCII));
    }

    private void writeBulk(byte[] bytes) throws IOException {
        out.write(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(bytes);
        out.write('\r');
        out.write('\n');
    }

    private String readLine() throws IOException {
        StringBuilder line = new StringBuilder();
        int c;
        while ((c = in.read()) != '\r') {
            if (c < 0) {
                throw new IOException("Redis closed the connection");
            }
            line.append((char) c);
        }
        in.read();
        return line.toString();
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
