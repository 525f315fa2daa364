package io.kvstore.service.cluster;

import io.kvstore.service.ServiceProcesses;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
        awaitHealthy();
        return this;
    }

    /**
     * Waits until etcd answers its {@code /health} with {@code "health":"true"}: it has a leader and serves a
     * read. Listening is not enough: etcd accepts connections before it has elected itself, and a test's first
     * put with a 5 s timeout then fails on a loaded machine; before that {@code /health} answers 503 or nothing.
     */
    private void awaitHealthy() throws IOException, InterruptedException {
        HttpRequest health = HttpRequest.newBuilder(URI.create(endpoint() + "/health"))
                .timeout(Duration.ofSeconds(5))
                .build();
        String last = "no answer";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        try (HttpClient http =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
            while (System.nanoTime() < deadline) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("etcd exited: " + Files.readString(log));
                }
                try {
                    HttpResponse<String> r = http.send(health, HttpResponse.BodyHandlers.ofString());
                    last = r.statusCode() + " " + r.body();
                    if (r.statusCode() == 200 && r.body().replace(" ", "").contains("\"health\":\"true\"")) {
                        return;
                    }
                } catch (IOException notYet) {
                    last = notYet.toString(); // not listening yet, or not answering yet
                }
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException("etcd at " + endpoint() + " was not healthy within 90 s (last answer: " + last
                + "): " + Files.readString(log));
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
