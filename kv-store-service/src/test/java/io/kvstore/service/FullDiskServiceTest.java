package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.block.BlockHash;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The whole data directory on a real 3 MiB tmpfs (mounted by the test; skipped where it cannot mount) under
 * an NVMe tier configured for 8 MiB, over HTTP: the tier shrinks and evicts its own blocks, health turns
 * DEGRADED with the reason, the metrics show the usable capacity and the out-of-space errors, and every
 * acknowledged block is fetchable or counted as evicted. Then the filesystem is filled to the last byte:
 * namespace changes answer 507 problem JSON and change nothing, in memory or after a restart (with 256 KiB
 * freed: the NVMe index needs a little room to open).
 */
class FullDiskServiceTest {

    private static final long MIB = 1 << 20;

    @TempDir
    Path tmp;

    private Path dataDir;

    private void mountSmallFilesystem() throws Exception {
        dataDir = Files.createDirectories(tmp.resolve("data"));
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", dataDir.toString())
                .redirectErrorStream(true)
                .start();
        assumeTrue(
                p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0,
                "cannot mount a tmpfs here (needs root): "
                        + new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
    }

    @AfterEach
    void unmount() throws Exception {
        if (dataDir != null) {
            new ProcessBuilder("umount", "-l", dataDir.toString()).start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    private ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(KvStoreApplication.class)
                .run(
                        "--server.port=0",
                        "--kvstore.data-dir=" + dataDir,
                        "--kvstore.tiers.dram.capacity=1MB",
                        "--kvstore.tiers.dram.slab-size=256KB",
                        "--kvstore.tiers.nvme.capacity=8MB",
                        "--kvstore.tiers.nvme.file-size=1MB",
                        "--kvstore.tiers.nvme.slab-size=256KB",
                        "--kvstore.tiers.nvme.io-threads=2");
    }

    @Test
    void aFullFilesystemDegradesTheServiceButLosesNothingSilently() throws Exception {
        mountSmallFilesystem();
        int batches = 8; // 8 x 32 blocks of 16 KiB = 4 MiB, more than the filesystem holds
        int perBatch = 32;
        try (var app = start()) {
            Http http = Http.of(app);
            assertThat(http.json("PUT", "/v1/namespaces/llama", TestLayout.declaration("m"))
                            .statusCode())
                    .isEqualTo(201);
            assertThat(http.json("PUT", "/v1/namespaces/spare", TestLayout.declaration("m"))
                            .statusCode())
                    .isEqualTo(201);
            List<BlockHash> all = new java.util.ArrayList<>();
            List<byte[]> bytes = new java.util.ArrayList<>();
            for (int b = 0; b < batches; b++) {
                List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(perBatch, 100 + b));
                List<byte[]> blocks = TestLayout.blocks(perBatch, 100 + b);
                var stored = http.putBytes(
                        "/v1/namespaces/llama/blocks", "application/octet-stream", Http.frames(hashes, blocks, null));
                assertThat(stored.statusCode())
                        .as("the NVMe tier makes room: " + stored.body())
                        .isEqualTo(200);
                all.addAll(hashes);
                bytes.addAll(blocks);
                app.getBean(io.kvstore.engine.TierEngine.class).awaitMoves();
            }

            var health = http.get("/actuator/health");
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body())
                    .endsWith("\"status\":\"DEGRADED\"}")
                    .contains("\"reason\":\"NVME: the filesystem of", "No space left on device");

            String metrics = http.get("/actuator/prometheus").body();
            double usable = gauge(metrics, "kvstore_tier_capacity_effective_bytes{tier=\"NVME\"}");
            assertThat(usable).isBetween((double) MIB, 2.0 * MIB);
            assertThat(gauge(metrics, "kvstore_tier_capacity_bytes{tier=\"NVME\"}"))
                    .isEqualTo(8.0 * MIB);
            assertThat(gauge(metrics, "kvstore_tier_out_of_space_total{tier=\"NVME\"}"))
                    .isBetween(1.0, 4.0);
            assertThat(gauge(metrics, "kvstore_tier_degraded{tier=\"NVME\"}")).isEqualTo(1.0);

            int gone = 0;
            for (int i = 0; i < all.size(); i++) {
                var r = http.fetch("llama", "{\"blockHashes\":[\"" + all.get(i).hex() + "\"]}");
                if (r.statusCode() == 404) {
                    gone++;
                    continue;
                }
                assertThat(r.statusCode()).isEqualTo(200);
                byte[] body = r.body();
                byte[] payload = java.util.Arrays.copyOfRange(body, body.length - bytes.get(i).length, body.length);
                assertThat(payload).as("block " + i).isEqualTo(bytes.get(i));
            }
            double evicted = sum(http.get("/actuator/prometheus").body(), "kvstore_evictions_total", "tier=\"NVME\"");
            assertThat(gone).isGreaterThan(0);
            assertThat((double) gone).as("every block gone is counted").isEqualTo(evicted);

            // now not a byte is left: namespace changes are refused and change nothing
            fill(dataDir.resolve("filler"));
            var declared = http.json("PUT", "/v1/namespaces/fresh", TestLayout.declaration("m"));
            assertThat(declared.statusCode()).as(declared.body()).isEqualTo(507);
            assertThat(declared.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(declared.body()).contains("\"status\":507", "namespaces.json");
            var deleted = http.send("DELETE", "/v1/namespaces/spare", null, null);
            assertThat(deleted.statusCode()).as(deleted.body()).isEqualTo(507);
            assertThat(deleted.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(http.get("/v1/namespaces/fresh").statusCode()).isEqualTo(404);
            assertThat(http.get("/v1/namespaces/spare").statusCode()).isEqualTo(200);
        }
        // RocksDB needs a little room to recover its log on open: free 256 KiB, not enough for a block file.
        // The restart shows the declarations as they were before the refused changes.
        try (var filler =
                java.nio.channels.FileChannel.open(dataDir.resolve("filler"), java.nio.file.StandardOpenOption.WRITE)) {
            filler.truncate(filler.size() - 256 * 1024);
        }
        try (var app = start()) {
            Http http = Http.of(app);
            assertThat(http.get("/v1/namespaces/fresh").statusCode()).isEqualTo(404);
            assertThat(http.get("/v1/namespaces/spare").statusCode()).isEqualTo(200);
            assertThat(http.get("/v1/namespaces/llama").statusCode()).isEqualTo(200);

            // with room again the same changes go through, and last across a restart
            Files.delete(dataDir.resolve("filler"));
            assertThat(http.json("PUT", "/v1/namespaces/fresh", TestLayout.declaration("m"))
                            .statusCode())
                    .isEqualTo(201);
            assertThat(http.send("DELETE", "/v1/namespaces/spare", null, null).statusCode())
                    .isEqualTo(200);
        }
        try (var app = start()) {
            Http http = Http.of(app);
            assertThat(http.get("/v1/namespaces/fresh").statusCode()).isEqualTo(200);
            assertThat(http.get("/v1/namespaces/spare").statusCode()).isEqualTo(404);
        }
    }

    /** Writes {@code file} until the filesystem refuses another byte. */
    private static void fill(Path file) throws IOException {
        byte[] chunk = new byte[4096];
        try (OutputStream out = Files.newOutputStream(file)) {
            while (true) {
                out.write(chunk);
                out.flush();
            }
        } catch (IOException full) {
            assertThat(full.getMessage()).contains("No space left on device");
        }
        try (OutputStream out = Files.newOutputStream(file, java.nio.file.StandardOpenOption.APPEND)) {
            for (int i = 0; i < 4096; i++) {
                out.write(0);
                out.flush();
            }
        } catch (IOException full) {
            // the last partial page is taken too
        }
    }

    /** The sum of every series of {@code name} whose labels contain {@code label}. */
    private static double sum(String prometheus, String name, String label) {
        Matcher m = Pattern.compile("(?m)^" + name + "\\{([^}]*)\\} (\\S+)$").matcher(prometheus);
        double total = 0;
        while (m.find()) {
            if (m.group(1).contains(label)) {
                total += Double.parseDouble(m.group(2));
            }
        }
        return total;
    }

    private static double gauge(String prometheus, String series) {
        Matcher m =
                Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(prometheus);
        assertThat(m.find()).as(series + " is exported").isTrue();
        return Double.parseDouble(m.group(1));
    }
}
