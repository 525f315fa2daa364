package io.kvstore.ffm.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Two JVMs with their own UCX contexts exchange worker address and remote key over a pipe, then move
 * data one-sided both ways; and a peer killed mid-transfer makes the transfer fail in bounded time.
 */
class UcxTwoProcessTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final int BLOCK = 1 << 20;

    @BeforeAll
    static void ucxPresent() {
        assumeTrue(Ucp.availability().available(), () -> "skipped: " + Ucp.availability());
    }

    /** A peer JVM and the pipe to it. */
    private record Peer(Process process, BufferedReader out, PrintWriter in, byte[] address, long region, byte[] key)
            implements AutoCloseable {

        static Peer start(long size) throws Exception {
            return start(size, null);
        }

        static Peer start(long size, String transports) throws Exception {
            String java = ProcessHandle.current().info().command().orElse("java");
            ProcessBuilder builder = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    System.getProperty("java.class.path"), UcxPeerProcess.class.getName(), String.valueOf(size))
                    .redirectError(ProcessBuilder.Redirect.INHERIT);
            if (transports != null) {
                builder.environment().put("UCX_TLS", transports);
            }
            Process p = builder.start();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream()));
            String address = out.readLine();
            String region = out.readLine();
            assertThat(address).as("peer's first line").startsWith("ADDRESS ");
            String[] r = region.split(" ");
            return new Peer(p, out, new PrintWriter(p.getOutputStream(), true),
                    HexFormat.of().parseHex(address.substring(8)), Long.parseLong(r[1]), HexFormat.of().parseHex(r[2]));
        }

        String ask(String command) throws Exception {
            in.println(command);
            return out.readLine();
        }

        @Override
        public void close() throws Exception {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    private static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        for (long off = 0; off < s.byteSize(); off += 1 << 30) {
            c.update(s.asSlice(off, Math.min(1L << 30, s.byteSize() - off)).asByteBuffer());
        }
        return c.getValue();
    }

    @Test
    void oneGibibyteMovesBothWaysBetweenProcesses() throws Exception {
        long size = 1L << 30;
        try (Peer peer = Peer.start(size);
                Arena arena = Arena.ofShared();
                UcpContext context = new UcpContext(Ucp.FEATURE_RMA);
                UcpWorker worker = context.newWorker()) {
            MemorySegment local = arena.allocate(size, 4096);
            for (long i = 0; i < size; i += 8) {
                local.set(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
            }
            try (UcpMemory registered = context.map(local);
                    UcpEndpoint endpoint = worker.connect(peer.address());
                    RemoteKey key = endpoint.unpack(peer.key())) {
                long start = System.nanoTime();
                for (long off = 0; off < size; off += BLOCK) {
                    endpoint.put(local.asSlice(off, BLOCK), peer.region() + off, key, TIMEOUT);
                }
                endpoint.flush(TIMEOUT);
                double putSeconds = (System.nanoTime() - start) / 1e9;
                assertThat(peer.ask("crc")).isEqualTo("CRC " + crc(local));

                assertThat(peer.ask("fill")).isEqualTo("FILLED");
                start = System.nanoTime();
                for (long off = 0; off < size; off += BLOCK) {
                    endpoint.get(local.asSlice(off, BLOCK), peer.region() + off, key, TIMEOUT);
                }
                double getSeconds = (System.nanoTime() - start) / 1e9;
                assertThat(peer.ask("crc")).isEqualTo("CRC " + crc(local));
                System.out.printf("UCX 1 GiB in 1 MiB blocks between processes: put %.0f MB/s, get %.0f MB/s%n",
                        size / putSeconds / 1e6, size / getSeconds / 1e6);
                peer.ask("quit");
            }
        }
    }

    /**
     * Over TCP, UCX 1.13 emulates put/get in software at tens of MB/s (docs/benchmarks.md), so this
     * moves 32 MiB: it proves the wire-up, keys and data over TCP, not the bandwidth.
     */
    @Test
    void rmaWorksOverTcpBetweenProcesses() throws Exception {
        long size = 32L << 20;
        io.kvstore.ffm.libc.LibC.setenv("UCX_TLS", "tcp", true);
        try (Peer peer = Peer.start(size, "tcp");
                Arena arena = Arena.ofShared();
                UcpContext context = new UcpContext(Ucp.FEATURE_RMA);
                UcpWorker worker = context.newWorker()) {
            MemorySegment local = arena.allocate(size, 4096);
            for (long i = 0; i < size; i += 8) {
                local.set(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L + 1);
            }
            try (UcpEndpoint endpoint = worker.connect(peer.address());
                    RemoteKey key = endpoint.unpack(peer.key())) {
                long start = System.nanoTime();
                for (long off = 0; off < size; off += BLOCK) {
                    endpoint.put(local.asSlice(off, BLOCK), peer.region() + off, key, TIMEOUT);
                }
                endpoint.flush(TIMEOUT);
                System.out.printf("UCX over tcp, 32 MiB put: %.0f MB/s%n", size / ((System.nanoTime() - start) / 1e9) / 1e6);
                assertThat(peer.ask("crc")).isEqualTo("CRC " + crc(local));
                local.fill((byte) 0);
                assertThat(peer.ask("fill")).isEqualTo("FILLED");
                for (long off = 0; off < size; off += BLOCK) {
                    endpoint.get(local.asSlice(off, BLOCK), peer.region() + off, key, TIMEOUT);
                }
                assertThat(peer.ask("crc")).isEqualTo("CRC " + crc(local));
                peer.ask("quit");
            }
        } finally {
            io.kvstore.ffm.libc.LibC.setenv("UCX_TLS", System.getenv().getOrDefault("UCX_TLS", "all"), true);
        }
    }

    @Test
    void killedPeerFailsTheTransferInBoundedTime() throws Exception {
        long size = 256L << 20;
        Peer peer = Peer.start(size);
        try (Arena arena = Arena.ofShared();
                UcpContext context = new UcpContext(Ucp.FEATURE_RMA);
                UcpWorker worker = context.newWorker()) {
            MemorySegment local = arena.allocate(size, 4096);
            try (UcpMemory registered = context.map(local);
                    UcpEndpoint endpoint = worker.connect(peer.address());
                    RemoteKey key = endpoint.unpack(peer.key())) {
                endpoint.get(local.asSlice(0, BLOCK), peer.region(), key, TIMEOUT);
                peer.process().destroyForcibly();
                peer.process().waitFor(30, TimeUnit.SECONDS);
                long start = System.nanoTime();
                assertThatThrownBy(() -> {
                    for (int round = 0; round < 100; round++) {
                        for (long off = 0; off < size; off += BLOCK) {
                            endpoint.get(local.asSlice(off, BLOCK), peer.region() + off, key, Duration.ofSeconds(5));
                        }
                    }
                }).isInstanceOf(UcxException.class);
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
            }
        } finally {
            peer.close();
        }
    }
}
