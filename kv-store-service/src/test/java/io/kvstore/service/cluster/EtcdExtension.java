package io.kvstore.service.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One real etcd for a test class ({@code @RegisterExtension static final EtcdExtension etcd}): started
 * before its first test in a directory of its own, stopped and removed after its last.
 */
final class EtcdExtension implements BeforeAllCallback, AfterAllCallback {

    private @Nullable Path dir;
    private @Nullable EtcdServer server;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        dir = Files.createTempDirectory("kvstore-etcd-test-");
        server = new EtcdServer(dir).start();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        if (server != null) {
            server.close();
        }
        if (dir != null) {
            try (var files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // best effort: a temporary directory left behind is harmless
            }
        }
    }

    String endpoint() {
        return server().endpoint();
    }

    /** A directory for the class's other files (node data), removed with etcd's. */
    Path dir() {
        if (dir == null) {
            throw new IllegalStateException("etcd is not started");
        }
        return dir;
    }

    void stop() throws InterruptedException {
        server().stop();
    }

    void start() throws IOException, InterruptedException {
        server().start();
    }

    private EtcdServer server() {
        if (server == null) {
            throw new IllegalStateException("etcd is not started");
        }
        return server;
    }
}
