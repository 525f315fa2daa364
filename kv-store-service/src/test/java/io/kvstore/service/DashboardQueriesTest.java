package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The shipped dashboard against a real Prometheus: the service runs a small workload that touches every
 * panel (stores past DRAM's watermark so blocks demote to NVMe, hits and misses, fetches from NVMe that
 * promote, a lease), Debian's {@code prometheus} scrapes it with {@code configs/prometheus.yml} (only the
 * target and interval changed), and every PromQL expression in {@code grafana/dashboards/kvstore.json} must
 * parse and return at least one series. Every {@code kvstore_*} name in the dashboard must be one the
 * service exports, and the JSON must be what Grafana 10+ imports.
 */
class DashboardQueriesTest {

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path DASHBOARD = ROOT.resolve("grafana/dashboards/kvstore.json");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @TempDir
    Path dir;

    @Test
    void everyDashboardQueryReturnsSeriesFromARealPrometheus() throws Exception {
        JsonNode dashboard = JSON.readTree(Files.readString(DASHBOARD));
        Map<String, String> queries = queries(dashboard);
        assertThat(queries).hasSizeGreaterThanOrEqualTo(12);
        Path prometheusBinary = Path.of("/usr/bin/prometheus");
        assertThat(prometheusBinary)
                .as("Debian's prometheus (apt-get install prometheus; ./kvstore deps installs it)")
                .isExecutable();

        try (var app = new SpringApplicationBuilder(KvStoreApplication.class)
                .run(
                        "--server.port=0",
                        "--kvstore.data-dir=" + dir.resolve("data"),
                        "--kvstore.tiers.dram.capacity=512KB",
                        "--kvstore.tiers.dram.slab-size=256KB",
                        "--kvstore.tiers.dram.promote-on-hit=true",
                        "--kvstore.tiers.nvme.capacity=4MB",
                        "--kvstore.tiers.nvme.file-size=1MB",
                        "--kvstore.tiers.nvme.slab-size=256KB",
                        "--kvstore.tiers.nvme.io-threads=2")) {
            int port = ((WebServerApplicationContext) app).getWebServer().getPort();
            Http http = new Http(port);
            workload(http, app.getBean(io.kvstore.engine.TierEngine.class));
            String exported = http.get("/actuator/prometheus").body();
            assertThat(names(queries.values()))
                    .as("metrics the dashboard names that the service does not export")
                    .allSatisfy(name -> assertThat(exported).contains("\n" + name));

            int promPort;
            try (ServerSocket s = new ServerSocket(0)) {
                promPort = s.getLocalPort();
            }
            String config = Files.readString(ROOT.resolve("configs/prometheus.yml"))
                    .replace("localhost:8080", "127.0.0.1:" + port)
                    .replaceAll("scrape_interval: \\d+s", "scrape_interval: 1s");
            assertThat(config).contains("127.0.0.1:" + port, "/actuator/prometheus");
            Files.writeString(dir.resolve("prometheus.yml"), config);
            Process prometheus = new ProcessBuilder(
                            prometheusBinary.toString(),
                            "--config.file=" + dir.resolve("prometheus.yml"),
                            "--storage.tsdb.path=" + dir.resolve("tsdb"),
                            "--web.listen-address=127.0.0.1:" + promPort)
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("prometheus.log").toFile())
                    .start();
            try {
                String api = "http://127.0.0.1:" + promPort + "/api/v1/query?query=";
                awaitReady("http://127.0.0.1:" + promPort + "/-/ready");
                awaitScrapes(api, 3);
                workload(http, app.getBean(io.kvstore.engine.TierEngine.class)); // counters move between scrapes
                awaitScrapes(api, 6);
                List<String> failures = new ArrayList<>();
                for (var q : queries.entrySet()) {
                    String expr = q.getValue()
                            .replace("$__rate_interval", "30s")
                            .replace("$__interval", "5s")
                            .replace("$instance", ".*");
                    JsonNode answer = query(api, expr);
                    if (!"success".equals(answer.path("status").asString())) {
                        failures.add(q.getKey() + ": " + expr + " -> " + answer);
                    } else if (answer.path("data").path("result").isEmpty()) {
                        failures.add(q.getKey() + ": " + expr + " -> no series");
                    }
                }
                assertThat(failures)
                        .as(
                                "dashboard queries that failed or returned nothing; prometheus log: %s",
                                Files.readString(dir.resolve("prometheus.log")))
                        .isEmpty();
            } finally {
                prometheus.destroy();
                if (!prometheus.waitFor(10, TimeUnit.SECONDS)) {
                    prometheus.destroyForcibly();
                }
            }
        }
    }

    @Test
    void dashboardIsValidForGrafanaTen() throws Exception {
        JsonNode d = JSON.readTree(Files.readString(DASHBOARD));
        assertThat(d.path("schemaVersion").asInt()).isGreaterThanOrEqualTo(38);
        assertThat(d.path("uid").asString()).isNotBlank();
        Set<Integer> ids = new HashSet<>();
        for (JsonNode p : d.path("panels")) {
            assertThat(ids.add(p.path("id").asInt()))
                    .as("panel id %s is unique", p.path("id"))
                    .isTrue();
            assertThat(p.has("gridPos"))
                    .as("panel %s has a gridPos", p.path("title"))
                    .isTrue();
            if (!p.path("type").asString().equals("row")) {
                assertThat(p.path("datasource").path("uid").asString())
                        .as("panel %s", p.path("title"))
                        .isEqualTo("${datasource}");
                assertThat(p.path("targets")).isNotEmpty();
                for (JsonNode t : p.path("targets")) {
                    assertThat(t.path("refId").asString()).isNotBlank();
                    assertThat(t.path("expr").asString()).isNotBlank();
                }
            }
        }
        Map<String, String> variables = new LinkedHashMap<>();
        for (JsonNode v : d.path("templating").path("list")) {
            variables.put(v.path("name").asString(), v.path("type").asString());
        }
        assertThat(variables).containsEntry("datasource", "datasource").containsEntry("instance", "query");
        // the provisioning files point at the same uid and folder
        assertThat(Files.readString(ROOT.resolve("grafana/provisioning/datasources/kvstore.yaml")))
                .contains("type: prometheus");
        assertThat(Files.readString(ROOT.resolve("grafana/provisioning/dashboards/kvstore.yaml")))
                .contains("type: file");
    }

    /** Stores past DRAM's watermark, looks up (hits and a miss), fetches demoted blocks back (promotions), leases. */
    private static void workload(Http http, io.kvstore.engine.TierEngine engine) throws Exception {
        http.json("PUT", "/v1/namespaces/dash", TestLayout.declaration("dashboard-model"));
        int seed = (int) (System.nanoTime() & 0xffff);
        int[] tokens = TestLayout.tokens(48, seed);
        List<BlockHash> hashes = TestLayout.hashes(tokens);
        var stored = http.putBytes(
                "/v1/namespaces/dash/blocks",
                "application/octet-stream",
                Http.frames(hashes, TestLayout.blocks(48, seed), null));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        engine.awaitMoves();
        var hit = http.json(
                "POST", "/v1/lookup", "{\"namespace\":\"dash\",\"tokenIds\":" + TestLayout.tokenJson(tokens) + "}");
        assertThat(hit.body()).contains("\"matchedBlocks\":48");
        http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"dash\",\"tokenIds\":" + TestLayout.tokenJson(TestLayout.tokens(2, seed + 1)) + "}");
        var fetched = http.fetch("dash", "{\"blockHashes\":" + Http.hexList(hashes.subList(0, 8)) + "}");
        assertThat(fetched.statusCode()).isEqualTo(200);
        engine.awaitMoves();
        http.json(
                "POST",
                "/v1/lookup",
                "{\"namespace\":\"dash\",\"tokenIds\":" + TestLayout.tokenJson(tokens) + ",\"lease\":true}");
    }

    /** Every target expression of every panel, keyed by panel title and refId. */
    private static Map<String, String> queries(JsonNode dashboard) {
        Map<String, String> out = new LinkedHashMap<>();
        for (JsonNode p : dashboard.path("panels")) {
            for (JsonNode t : p.path("targets")) {
                out.put(
                        p.path("title").asString() + " / " + t.path("refId").asString(),
                        t.path("expr").asString());
            }
        }
        return out;
    }

    private static Set<String> names(Iterable<String> expressions) {
        Set<String> names = new HashSet<>();
        Pattern metric = Pattern.compile("\\bkvstore_[a-z_]+\\b");
        for (String e : expressions) {
            Matcher m = metric.matcher(e);
            while (m.find()) {
                names.add(m.group());
            }
        }
        return names;
    }

    /**
     * Waits until Prometheus says it is ready: before that its API answers 503 with a plain-text body, which is not
     * JSON (on a slow machine the first queries arrive before it has replayed its write-ahead log).
     */
    private static void awaitReady(String ready) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        while (System.nanoTime() < deadline) {
            try {
                if (Http.CLIENT
                                .send(
                                        HttpRequest.newBuilder(URI.create(ready))
                                                .build(),
                                        HttpResponse.BodyHandlers.discarding())
                                .statusCode()
                        == 200) {
                    return;
                }
            } catch (java.io.IOException notListeningYet) {
                // prometheus is still starting
            }
            Thread.sleep(250);
        }
        throw new AssertionError("prometheus was not ready within 40 s");
    }

    private static void awaitScrapes(String api, int scrapes) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        while (System.nanoTime() < deadline) {
            try {
                JsonNode r = query(api, "count_over_time(up{job=\"kvstore\"}[5m])");
                JsonNode result = r.path("data").path("result");
                if (!result.isEmpty()
                        && result.get(0).path("value").get(1).asDouble() >= scrapes
                        && query(api, "up{job=\"kvstore\"}")
                                .path("data")
                                .path("result")
                                .get(0)
                                .path("value")
                                .get(1)
                                .asString()
                                .equals("1")) {
                    return;
                }
            } catch (java.io.IOException notUpYet) {
                // prometheus is still starting
            }
            Thread.sleep(250);
        }
        throw new AssertionError("prometheus did not scrape kvstore " + scrapes + " times within 40 s");
    }

    private static JsonNode query(String api, String expr) throws Exception {
        HttpResponse<String> r = Http.CLIENT.send(
                HttpRequest.newBuilder(URI.create(api + URLEncoder.encode(expr, StandardCharsets.UTF_8)))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        if (!r.body().startsWith("{")) {
            throw new java.io.IOException("prometheus answered " + r.statusCode() + ": " + r.body());
        }
        return JSON.readTree(r.body());
    }
}
