package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.service.events.DecodedBatch;
import io.kvstore.service.events.TestSubscriber;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The service with {@code kvstore.events.enabled=true}: blocks stored and a namespace deleted over HTTP come
 * out as vLLM KV events on the namespace's topic (read back through the replay socket, on loopback), health
 * shows where events go, and Prometheus has the event meters.
 */
@TestPropertySource(
        properties = {
            "kvstore.events.enabled=true",
            "kvstore.events.endpoint=tcp://127.0.0.1:*",
            "kvstore.events.replay-endpoint=tcp://127.0.0.1:*",
            "kvstore.events.topic=kv@test@{model}"
        })
class KvEventsServiceTest extends ServiceTest {

    @Test
    void storesAndANamespaceDeletionOverHttpArePublishedOnTheModelsTopic() throws Exception {
        JsonNode health = JsonMapper.builder()
                .build()
                .readTree(http.get("/actuator/health").body())
                .get("components")
                .get("kvEvents");
        assertThat(health.get("status").asString()).isEqualTo("UP");
        assertThat(health.get("details").get("enabled").asBoolean()).isTrue();
        String endpoint = health.get("details").get("endpoint").asString();
        String replay = health.get("details").get("replayEndpoint").asString();
        assertThat(endpoint).startsWith("tcp://127.0.0.1:");

        http.json("PUT", "/v1/namespaces/events", TestLayout.declaration("model-e"));
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(3, 11));
        var put = http.putBytes(
                "/v1/namespaces/events/blocks",
                "application/octet-stream",
                Http.frames(hashes, TestLayout.blocks(3, 11), null));
        assertThat(put.statusCode()).isEqualTo(200);
        List<Long> wire = hashes.stream().map(h -> h.lastLong()).toList();

        try (TestSubscriber sub = new TestSubscriber(endpoint, replay)) {
            List<DecodedBatch.Event> stored = awaitEvents(sub, e -> e.type().equals("BlockStored"), 3);
            assertThat(stored).extracting(e -> e.hashes().getFirst()).containsExactlyElementsOf(wire);
            assertThat(stored).allSatisfy(e -> {
                assertThat(e.medium()).isEqualTo("CPU"); // stored into DRAM
                assertThat(e.blockSize()).isEqualTo(16);
            });
            assertThat(stored.get(1).parent()).isEqualTo(wire.get(0));

            assertThat(http.json("DELETE", "/v1/namespaces/events", null).statusCode())
                    .isEqualTo(200);
            List<DecodedBatch.Event> removed = awaitEvents(sub, e -> e.type().equals("BlockRemoved"), 3);
            assertThat(removed).extracting(e -> e.hashes().getFirst()).containsExactlyInAnyOrderElementsOf(wire);
        }
        String prometheus = http.get("/actuator/prometheus").body();
        for (String name : List.of(
                "kvstore_events_published_total",
                "kvstore_events_batches_total",
                "kvstore_events_dropped_total",
                "kvstore_events_replay_requests_total",
                "kvstore_events_queued")) {
            assertThat(prometheus).as(name).contains(name);
        }
    }

    /** Asks for replay until {@code count} matching events on the model's topic have been published. */
    private static List<DecodedBatch.Event> awaitEvents(
            TestSubscriber sub, Predicate<DecodedBatch.Event> match, int count) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            List<DecodedBatch.Event> found = sub.replay(0).stream()
                    .filter(b -> b.topic().equals("kv@test@model-e"))
                    .flatMap(b -> b.events().stream())
                    .filter(match)
                    .toList();
            if (found.size() >= count || System.nanoTime() > deadline) {
                assertThat(found).hasSize(count);
                return found;
            }
            Thread.sleep(50);
        }
    }
}
