package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A subscriber written in Python with Debian's python3-zmq and python3-msgpack
 * ({@code src/test/python/kv_events_subscriber.py}) reads kvstore's events over real loopback sockets,
 * through replay and live, checks every batch against vLLM's schema (field order, tags, types, omitted
 * defaults) and reports what it decoded, which must be exactly what was published. Skipped, with the
 * reason, where python3 or those modules are missing ({@code ./kvstore deps} installs them).
 */
class PythonSubscriberTest {

    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final Path SCRIPT = Path.of("src/test/python/kv_events_subscriber.py");
    /** Debian's interpreter, where its python3-* packages are, ahead of any other python3 on the PATH. */
    private static final String PYTHON =
            Files.isExecutable(Path.of("/usr/bin/python3")) ? "/usr/bin/python3" : "python3";

    @BeforeAll
    static void pythonWithZmqAndMsgpack() throws Exception {
        assumeTrue(Files.exists(SCRIPT), "subscriber script not found at " + SCRIPT.toAbsolutePath());
        Process p;
        try {
            p = new ProcessBuilder(PYTHON, "-c", "import zmq, msgpack")
                    .redirectErrorStream(true)
                    .start();
        } catch (java.io.IOException e) {
            assumeTrue(false, PYTHON + " is not installed: " + e.getMessage());
            return;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assumeTrue(
                p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0,
                "python3-zmq / python3-msgpack missing for " + PYTHON + " (./kvstore deps installs them): "
                        + out.strip());
    }

    @ParameterizedTest
    @EnumSource(EventEncoding.class)
    void aPythonSubscriberDecodesEveryBatchAsVllmsSchemaDefinesIt(EventEncoding encoding) throws Exception {
        try (EventedEngine e = new EventedEngine(
                        EventedEngine.config(100_000, Duration.ofMillis(5), encoding, 100_000), 16 * 1024, 8, 64);
                TestSubscriber javaSub = new TestSubscriber(e.publisher.endpoint(), e.publisher.replayEndpoint())) {
            List<BlockKey> keys = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                keys.add(e.store("a", i)); // past HBM's watermark: demotions to DRAM
            }
            e.store("undeclared", 0);
            e.store("lora", 0); // declares a LoRA and an extra key: lora_name and extra_keys are set
            e.store("lora", 1);
            e.engine.delete(keys.get(3));
            e.awaitPublished(WAIT);

            Process python = new ProcessBuilder(
                            PYTHON,
                            SCRIPT.toString(),
                            e.publisher.endpoint(),
                            e.publisher.replayEndpoint(),
                            encoding.name().toLowerCase(java.util.Locale.ROOT))
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            try {
                BlockingQueue<String> lines = new LinkedBlockingQueue<>();
                Thread.ofPlatform().daemon().start(() -> {
                    try (BufferedReader r = new BufferedReader(
                            new InputStreamReader(python.getInputStream(), StandardCharsets.UTF_8))) {
                        r.lines().forEach(lines::add);
                    } catch (java.io.IOException ignored) {
                        // the process ended
                    }
                });
                assertThat(lines.poll(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo("READY");
                long probe = 100;
                String line;
                do { // store until a batch reaches the Python subscriber live
                    e.store("a", probe++);
                    line = lines.poll(200, TimeUnit.MILLISECONDS);
                    assertThat(probe).as("a live batch reached Python").isLessThan(100 + 450);
                } while (line == null);
                assertThat(line).isEqualTo("LIVE");
                e.engine.evict(TierId.DRAM, 0, 2);
                e.engine.delete(keys.get(5));
                e.awaitPublished(WAIT);
                long last = e.publisher.lastSeq();
                try (Writer w = new OutputStreamWriter(python.getOutputStream(), StandardCharsets.UTF_8)) {
                    w.write("UNTIL " + last + "\n");
                }
                assertThat(python.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS))
                        .as("python subscriber finished")
                        .isTrue();
                assertThat(python.exitValue())
                        .as("python subscriber's exit status (schema errors on stderr)")
                        .isZero();

                JsonMapper json = JsonMapper.builder().build();
                List<JsonNode> decoded = new ArrayList<>();
                for (String l : lines) {
                    if (l.startsWith("BATCH ")) {
                        decoded.add(json.readTree(l.substring(6)));
                    }
                }
                List<DecodedBatch> published = javaSub.replay(0);
                assertThat(published).hasSize((int) last + 1);
                assertThat(decoded).as("every batch, 0 to %d", last).hasSize(published.size());
                for (int i = 0; i < published.size(); i++) {
                    assertSame(decoded.get(i), published.get(i));
                }
                assertThat(published.stream().flatMap(b -> b.events().stream()).map(DecodedBatch.Event::medium))
                        .contains("GPU", "CPU");
                List<JsonNode> loraStores = new ArrayList<>();
                List<JsonNode> plainStores = new ArrayList<>();
                for (JsonNode batch : decoded) {
                    for (JsonNode ev : batch.get("events")) {
                        if (ev.get("type").asString().equals("BlockStored")) {
                            (batch.get("topic").asString().equals("kv@test@model-l") ? loraStores : plainStores)
                                    .add(ev);
                        }
                    }
                }
                assertThat(loraStores).as("stores of the LoRA namespace").hasSize(2);
                for (JsonNode ev : loraStores) {
                    assertThat(ev.get("lora_name").asString()).isEqualTo("sql-lora");
                    if (encoding == EventEncoding.MAP) {
                        assertThat(ev.get("extra_keys").toString())
                                .as("one entry per block: the LoRA name, then the declared keys")
                                .isEqualTo("[[\"sql-lora\",\"tenant-salt\"]]");
                    } else {
                        assertThat(ev.get("extra_keys").isNull())
                                .as("the array form stays 8 fields long, as llm-d reads it")
                                .isTrue();
                    }
                }
                assertThat(plainStores).isNotEmpty().allSatisfy(ev -> {
                    assertThat(ev.get("lora_name").isNull())
                            .as("lora_name without a LoRA")
                            .isTrue();
                    assertThat(ev.get("extra_keys").isNull())
                            .as("extra_keys left out")
                            .isTrue();
                });
            } finally {
                python.destroyForcibly();
            }
        }
    }

    /** Python's reading of a batch equals the Java decoder's reading of the same bytes. */
    private static void assertSame(JsonNode py, DecodedBatch b) {
        assertThat(py.get("seq").asLong()).isEqualTo(b.seq());
        assertThat(py.get("topic").asString()).isEqualTo(b.topic());
        assertThat(py.get("rank").asInt()).isEqualTo(b.dataParallelRank());
        assertThat(py.get("events")).hasSize(b.events().size());
        for (int i = 0; i < b.events().size(); i++) {
            DecodedBatch.Event ev = b.events().get(i);
            JsonNode p = py.get("events").get(i);
            assertThat(p.get("type").asString()).isEqualTo(ev.type());
            List<Long> hashes = new ArrayList<>();
            p.get("block_hashes").forEach(h -> hashes.add(new BigInteger(h.asString()).longValue()));
            assertThat(hashes).as("seq %d event %d hashes", b.seq(), i).isEqualTo(ev.hashes());
            JsonNode parent = p.get("parent_block_hash");
            assertThat(parent.isNull() ? null : new BigInteger(parent.asString()).longValue())
                    .isEqualTo(ev.parent());
            assertThat(p.get("block_size").asInt()).isEqualTo(ev.blockSize());
            assertThat(p.get("medium").isNull() ? null : p.get("medium").asString())
                    .isEqualTo(ev.medium());
            assertThat(p.get("lora_name").isNull() ? null : p.get("lora_name").asString())
                    .isEqualTo(ev.loraName());
        }
    }
}
