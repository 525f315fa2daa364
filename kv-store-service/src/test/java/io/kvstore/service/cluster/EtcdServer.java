package io.kvstore.service.cluster;

import io.kvstore.service.ServiceProcesses;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A real etcd (Debian's {@code etcd-server}, installed by {@code ./kvstore deps}) on free loopback ports
 * with its data in a temporary directory; it can be stopped and started again on the same ports and data.
 */
final class EtcdServer implements AutoCloseable {

    static final Path BINARY = Path.of("/usr/bin/etcd");

    private final Path dataDir;
    private final Path log;
    private final int clientPort;
    private final int peerPort;
    private Process process;

    EtcdServer(Path dir) throws IOException {
        Assumptions.assumeTrue(Files.isExecutable(BINARY), "etcd not installed (./kvstore deps installs etcd-server)");
        // etcd fsyncs every write: on a disk busy with other I/O that takes seconds, so its data lives in
        // memory (/dev/shm) where there is one; removed with the test directory's other files on close
        Path shm = Path.of("/dev/shm");
        this.dataDir = Files.isDirectory(shm) && Files.isWritable(shm)
                ? Files.createTempDirectory(shm, "kvstore-etcd-")
                : dir.resolve("etcd-data");
        this.log = dir.resolve("etcd.log");
        this.clientPort = ServiceProcesses.freePort();
        this.peerPort = ServiceProcesses.freePort();
    }

    String endpoint() {
        return "http://127.0.0.1:" + clientPort;
    }

    EtcdServer start() throws IOException, InterruptedException {
        String client = endpoint();
        String peer = "http://127.0.0.1:" + peerPort;
        process = new ProcessBuilder(List.of(
                        BINARY.toString(),
                        "--name",
                        "test",
                        "--data-dir",
                        dataDir.toString(),
                        "--listen-client-urls",
                        client,
                        "--advertise-client-urls",
                        client,
                        "--listen-peer-urls",
                        peer,
                        "--initial-advertise-peer-urls",
                        peer,
                        "--initial-cluster",
                        "test=" + peer,
                        "--log-level",
                        "warn"))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("etcd exited: " + Files.readString(log));
            }
            try (Socket s = new Socket("127.0.0.1", clientPort)) {
                return this;
            } catch (IOException notYet) {
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException("etcd did not listen on " + client + " within 60 s");
    }

    void stop() throws InterruptedException {
        if (process != null) {
            process.destroy();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
            process = null;
        }
    }

    @Override
    public void close() throws InterruptedException {
        stop();
        if (dataDir.startsWith("/dev/shm")) {
            try (var files = Files.walk(dataDir)) {
                files.sorted(java.util.Comparator.reverseOrder())
                        .forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // best effort: a leftover directory in /dev/shm is small and harmless
            }
        }
    }
}
