package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvstore.block.BlockHash;
import io.kvstore.service.KvStoreApplication;
import io.kvstore.service.ServiceProcesses;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A cluster node that answers HTTP before it could join (its web server is up while it still waits for
 * etcd): it neither acknowledges stores it cannot place nor answers 500 for settings it cannot publish.
 */
class ClusterStartupTest {

    @TempDir
    static Path dir;

    @Test
    void aNodeThatHasNotJoinedYetAnswers503ForStoresAndDeclarations() throws Exception {
        try (EtcdServer etcd = new EtcdServer(dir)) { // not started yet
            int port = ServiceProcesses.freePort();
            String base = "http://127.0.0.1:" + port;
            List<String> args = ClusterNodes.args(etcd.endpoint(), "solo", port, dir.resolve("solo"), "/st/");
            CompletableFuture<ConfigurableApplicationContext> node = CompletableFuture.supplyAsync(
                    () -> new SpringApplicationBuilder(KvStoreApplication.class).run(args.toArray(String[]::new)));
            await().atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(200))
                    .ignoreExceptions()
                    .until(() -> ClusterNodes.send(base, "GET", "/v1/namespaces/x", null) != null);

            var declared = ClusterNodes.send(base, "PUT", "/v1/namespaces/llama", ClusterNodes.DECLARATION);
            assertUnavailable(declared, "etcd cannot be written");
            List<BlockHash> chain = ClusterNodes.chain(10, 5);
            var stored = ClusterNodes.store(base, "llama", ClusterNodes.frames(chain, 0, 10));
            assertUnavailable(stored, "nothing was stored");

            etcd.start();
            try (ConfigurableApplicationContext joined = node.get(120, TimeUnit.SECONDS)) {
                assertThat(joined.isActive()).isTrue();
            }
        }
    }

    private static void assertUnavailable(HttpResponse<String> r, String detail) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        assertThat(r.headers().firstValue("Content-Type"))
                .hasValueSatisfying(ct -> assertThat(ct).contains("problem+json"));
        assertThat(r.body()).contains(detail);
    }
}
