package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.BlockInfo;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * The KV event stream, read by subscribers on real loopback sockets, tells the same story as the catalog:
 * stores, demotions, evictions, deletes and a namespace's deletion, in order, sequence numbers without
 * gaps; late joiners catch up through replay; a subscriber that never reads does not hold stores back; an
 * overflowing queue ends in {@code AllBlocksCleared} and a view that claims nothing that is gone, even
 * when it overflows before the catalog exists; a namespace deleted and declared again for another model
 * keeps each model's topic right; a replay of a full ring comes whole.
 */
class KvEventPublisherTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int BLOCK = 16 * 1024;
    private static final Map<TierId, String> MEDIUM = Map.of(TierId.HBM, "GPU", TierId.DRAM, "CPU");

    @ParameterizedTest
    @EnumSource(EventEncoding.class)
    void theEventStreamTellsTheCatalogsStory(EventEncoding encoding) throws Exception {
        try (EventedEngine e = new EventedEngine(
                        EventedEngine.config(100_000, Duration.ofMillis(5), encoding, 100_000), BLOCK, 8, 24);
                TestSubscriber sub = new TestSubscriber(e.publisher.endpoint(), e.publisher.replayEndpoint())) {
            sub.awaitConnected(e, WAIT);
            List<BlockKey> keys = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                keys.add(e.store("a", i)); // past HBM's high watermark: demotions to DRAM
            }
            for (int i = 0; i < 6; i++) {
                keys.add(e.store("b", i));
            }
            e.engine.awaitMoves();
            e.engine.evict(TierId.DRAM, 0, 3); // dropped: no tier below
            e.engine.delete(keys.get(19));
            e.engine.deleteNamespace("b");
            e.awaitPublished(WAIT);
            long last = e.publisher.lastSeq();
            sub.awaitSeq(last, WAIT);

            List<DecodedBatch> live = sub.live();
            List<DecodedBatch> stream = new ArrayList<>(sub.replay(0).stream()
                    .filter(b -> b.seq() < live.getFirst().seq())
                    .toList()); // what a subscriber that joined late would have asked for
            stream.addAll(live);
            EventLedger ledger = new EventLedger();
            ledger.apply(stream);
            assertThat(ledger.errors).isEmpty();
            assertThat(ledger.nextSeq).isEqualTo(last + 1);
            for (TierId tier : List.of(TierId.HBM, TierId.DRAM)) {
                assertThat(ledger.held("kv@test@model-a", MEDIUM.get(tier)))
                        .as("namespace a in %s", tier)
                        .isEqualTo(EventLedger.inCatalog(e.engine, keys, "a", tier));
                assertThat(ledger.held("kv@test@b", MEDIUM.get(tier)))
                        .as("deleted namespace b in %s", tier)
                        .isEmpty();
            }
            assertThat(ledger.held("kv@test@model-a", "CPU"))
                    .as("demotions reached DRAM")
                    .isNotEmpty();
            assertThat(stream.stream().flatMap(b -> b.events().stream()).map(DecodedBatch.Event::type))
                    .contains("BlockStored", "BlockRemoved")
                    .doesNotContain("AllBlocksCleared");
            DecodedBatch.Event firstOfA = stream.stream()
                    .filter(b -> b.topic().equals("kv@test@model-a"))
                    .findFirst()
                    .orElseThrow()
                    .events()
                    .getFirst();
            assertThat(firstOfA.blockSize()).as("declared block size").isEqualTo(16);
            assertThat(firstOfA.parent()).as("first block has no parent").isNull();
            assertThat(e.registry.get("kvstore.events.published").counter().count())
                    .isEqualTo((double) e.reported());
            assertThat(e.dropped()).isZero();
        }
    }

    @Test
    void aLateJoinerCatchesUpThroughReplayThenFollowsLive() throws Exception {
        try (EventedEngine e = new EventedEngine(
                // HBM room for 1024 blocks: on a slow machine awaitConnected stores dozens of probes, and with
                // 64 blocks they pushed the first 30 of namespace a down to DRAM (CI saw 10 of 40 in GPU)
                EventedEngine.config(100_000, Duration.ofMillis(5), EventEncoding.ARRAY, 100_000), BLOCK, 1024, 64)) {
            List<BlockKey> keys = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                keys.add(e.store("a", i));
            }
            e.awaitPublished(WAIT);
            long before = e.publisher.lastSeq();
            assertThat(before).isGreaterThanOrEqualTo(0);
            try (TestSubscriber late = new TestSubscriber(e.publisher.endpoint(), e.publisher.replayEndpoint())) {
                late.awaitConnected(e, WAIT);
                for (int i = 30; i < 40; i++) {
                    keys.add(e.store("a", i));
                }
                e.awaitPublished(WAIT);
                late.awaitSeq(e.publisher.lastSeq(), WAIT);
                List<DecodedBatch> live = late.live();
                List<DecodedBatch> replayed = late.replay(0);
                assertThat(replayed.getFirst().seq()).isZero();
                assertThat(replayed.getLast().seq()).isEqualTo(e.publisher.lastSeq());
                List<DecodedBatch> stream = new ArrayList<>(replayed.stream()
                        .filter(b -> b.seq() < live.getFirst().seq())
                        .toList());
                stream.addAll(live);
                EventLedger ledger = new EventLedger();
                ledger.apply(stream);
                assertThat(ledger.errors).isEmpty();
                assertThat(ledger.held("kv@test@model-a", "GPU"))
                        .hasSize(40)
                        .isEqualTo(EventLedger.inCatalog(e.engine, keys, "a", TierId.HBM));
                assertThat(late.replay(before + 1))
                        .as("replay from a later seq")
                        .allSatisfy(b -> assertThat(b.seq()).isGreaterThan(before));
                assertThat(e.registry
                                .get("kvstore.events.replay.requests")
                                .counter()
                                .count())
                        .isEqualTo(2.0);
            }
        }
    }

    @Test
    void aSubscriberThatNeverReadsDoesNotHoldStoresBack() throws Exception {
        int blocks = 4_000;
        long withoutEvents;
        try (EventedEngine quiet = new EventedEngine(
                EventedEngine.config(100_000, Duration.ofMillis(5), EventEncoding.ARRAY, 100), 4096, 8192, 64)) {
            withoutEvents = timeStores(quiet, "warm", blocks); // the same stores, nobody listening
        }
        try (EventedEngine e = new EventedEngine(
                        EventedEngine.config(100_000, Duration.ofMillis(5), EventEncoding.ARRAY, 100), 4096, 8192, 64);
                ZContext context = new ZContext(1);
                TestSubscriber reader = new TestSubscriber(e.publisher.endpoint(), e.publisher.replayEndpoint())) {
            ZMQ.Socket stuck = context.createSocket(SocketType.SUB);
            stuck.setRcvHWM(1);
            stuck.setHandshakeIvl(EventSockets.CONNECT_HANDSHAKE_MILLIS);
            stuck.connect(e.publisher.endpoint());
            stuck.subscribe(new byte[0]); // and never reads
            reader.awaitConnected(e, WAIT);
            long withStuckSubscriber = timeStores(e, "a", blocks);
            e.awaitPublished(WAIT);
            reader.awaitSeq(e.publisher.lastSeq(), WAIT);
            assertThat(e.dropped()).isZero();
            assertThat(reader.live().stream()
                            .filter(b -> b.topic().equals("kv@test@model-a"))
                            .mapToLong(b -> b.events().size())
                            .sum())
                    .as("the subscriber that reads got every event")
                    .isEqualTo(blocks);
            assertThat(withStuckSubscriber)
                    .as(
                            "stores with a stuck subscriber (%d ms) vs no subscriber (%d ms)",
                            withStuckSubscriber / 1_000_000, withoutEvents / 1_000_000)
                    .isLessThan(5 * withoutEvents + Duration.ofSeconds(2).toNanos());
        }
    }

    /** An engine whose events queue holds 16 changes (so a burst overflows it), with 256 HBM and 64 DRAM blocks. */
    private static EventedEngine withASixteenChangeQueue() throws Exception {
        return new EventedEngine(
                EventedEngine.config(16, Duration.ofMillis(500), EventEncoding.ARRAY, 100_000), BLOCK, 256, 64);
    }

    @Test
    void anOverflowingQueueIsCountedAndEndsInAllBlocksCleared() throws Exception {
        try (EventedEngine e = withASixteenChangeQueue();
                TestSubscriber sub = new TestSubscriber(e.publisher.endpoint(), e.publisher.replayEndpoint())) {
            sub.awaitConnected(e, WAIT);
            List<BlockKey> keys = new ArrayList<>();
            for (int i = 0; i < 150; i++) {
                keys.add(e.store("a", i)); // one chain, all in HBM
            }
            for (int i = 100; i < 150; i += 2) {
                e.engine.delete(keys.get(i)); // from block 100 on, every other block is gone: its child is an orphan
            }
            e.awaitPublished(WAIT);
            e.awaitResynced(WAIT);
            sub.awaitSeq(e.publisher.lastSeq(), WAIT);
            assertThat(e.dropped()).as("changes beyond a queue of 16").isPositive();
            assertThat(e.registry.get("kvstore.events.cleared").counter().count())
                    .isPositive();
            List<DecodedBatch> stream = new ArrayList<>(sub.replay(0));
            assertThat(stream.stream().flatMap(b -> b.events().stream()))
                    .anyMatch(ev -> ev.type().equals("AllBlocksCleared"));
            EventLedger ledger = new EventLedger();
            ledger.apply(stream);
            assertThat(ledger.errors).isEmpty();
            assertThat(e.registry.get("kvstore.events.resynced").counter().count())
                    .as("copies re-announced after the clear")
                    .isPositive();
            for (TierId tier : List.of(TierId.HBM, TierId.DRAM)) {
                assertThat(ledger.held("kv@test@model-a", MEDIUM.get(tier)))
                        .as(
                                "after the clear and the re-announcement the view equals the catalog in %s, but for"
                                        + " the blocks whose parent is gone and their descendants",
                                tier)
                        .isEqualTo(EventLedger.inCatalog(e.engine, keys.subList(0, 100), "a", tier));
            }
            assertThat(ledger.held("kv@test@model-a", "GPU"))
                    .as("blocks held after the clear")
                    .isNotEmpty();
        }
    }

    /**
     * After a clear the re-announcement read the catalog in its map's order (the NVMe index's, by hash, at a
     * restart), a chain's child before its parent as often as not: a router (Dynamo's radix tree, llm-d)
     * drops or misplaces a BlockStored whose parent_block_hash it does not know yet.
     */
    @Test
    void aReannouncedChainGoesOutParentFirst() throws Exception {
        try (EventedEngine e = withASixteenChangeQueue();
                TestSubscriber sub = new TestSubscriber(e.publisher.endpoint(), e.publisher.replayEndpoint())) {
            sub.awaitConnected(e, WAIT);
            for (int i = 0; i < 150; i++) {
                e.store("a", i); // one chain, all in HBM: nothing demoted or evicted
            }
            e.awaitPublished(WAIT);
            e.awaitResynced(WAIT);
            sub.awaitSeq(e.publisher.lastSeq(), WAIT);
            assertThat(e.registry.get("kvstore.events.resynced").counter().count())
                    .isPositive();
            Set<Long> known = new java.util.HashSet<>();
            List<String> orphans = new ArrayList<>();
            for (DecodedBatch b : sub.replay(0)) {
                for (DecodedBatch.Event ev : b.events()) {
                    switch (ev.type()) {
                        case "AllBlocksCleared" -> {
                            known.clear();
                            orphans.clear();
                        }
                        case "BlockStored" -> {
                            if (ev.parent() != null && !known.contains(ev.parent())) {
                                orphans.add(Long.toHexString(ev.hashes().getFirst()));
                            }
                            known.addAll(ev.hashes());
                        }
                        default -> {}
                    }
                }
            }
            assertThat(known)
                    .as("the whole chain announced after the last clear")
                    .hasSize(150);
            assertThat(orphans).as("blocks announced before their parent").isEmpty();
        }
    }

    @Test
    void aMalformedReplayRequestIsIgnoredAndTheSocketKeepsAnswering() throws Exception {
        try (EventedEngine e = new EventedEngine(
                        EventedEngine.config(1000, Duration.ofMillis(5), EventEncoding.ARRAY, 1000), BLOCK, 8, 8);
                ZContext context = new ZContext(1);
                TestSubscriber sub = new TestSubscriber(e.publisher.endpoint(), e.publisher.replayEndpoint())) {
            e.store("a", 0);
            e.awaitPublished(WAIT);
            try (ZMQ.Socket dealer = context.createSocket(SocketType.DEALER)) {
                dealer.connect(e.publisher.replayEndpoint());
                dealer.send(new byte[0], ZMQ.SNDMORE);
                dealer.send(new byte[] {1, 2, 3}, 0); // not an 8-byte sequence number
            }
            assertThat(sub.replay(0)).hasSize(1);
            assertThat(ByteBuffer.wrap(EventSockets.seqBytes(-1)).getLong()).isEqualTo(-1);
        }
    }

    /**
     * At start-up the engine's recover() announces every NVMe block before EngineConfiguration calls
     * resyncFrom: with more blocks than queue-size the queue overflows, AllBlocksCleared goes out with no
     * catalog to re-announce from, and nothing re-announces once the catalog is there.
     */
    @Test
    void anOverflowBeforeResyncFromIsReannouncedOnceTheCatalogIsThere() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        EventsProperties config = EventedEngine.config(16, Duration.ofMillis(50), EventEncoding.ARRAY, 100_000);
        KvEventPublisher p = new KvEventPublisher(config, "test", EventedEngine.DECLARED::get, registry);
        try (TestSubscriber sub = new TestSubscriber(p.endpoint(), p.replayEndpoint())) {
            List<BlockInfo> catalog = new ArrayList<>();
            for (int i = 0; i < 200; i++) { // recover(): one copyAdded per NVMe block, on the constructing thread
                BlockKey key = EventedEngine.key("a", i);
                p.copyAdded(TierId.NVME, new BlockRecord(key, null, 4096, 0));
                catalog.add(new BlockInfo(key, null, 4096, 0, Set.of(TierId.NVME), 0, 0));
            }
            awaitTrue(() -> registry.get("kvstore.events.cleared").counter().count() > 0, "cleared");
            p.resyncFrom(catalog::iterator, key -> null); // EngineConfiguration, after the engine was built
            awaitTrue(() -> !p.resyncPending(), "resynced");
            EventLedger ledger = new EventLedger();
            ledger.apply(sub.replay(0));
            assertThat(ledger.held("kv@test@model-a", "DISK"))
                    .as("every recovered NVMe block announced")
                    .hasSize(200);
        } finally {
            p.close();
        }
    }

    /**
     * A namespace deleted (its removals queued) and declared again with another model before the publisher's
     * next round: the removals are resolved against the new declaration and go out on the new model's topic,
     * so the old topic's subscribers keep the blocks forever.
     */
    @Test
    void removalsOfADeletedNamespaceGoWhereItsStoresWentEvenIfItIsDeclaredAgain() throws Exception {
        Map<String, NamespaceTopics.Declared> declared = new ConcurrentHashMap<>();
        declared.put("n", new NamespaceTopics.Declared("m1", 16));
        EventsProperties config = EventedEngine.config(1000, Duration.ofMillis(1000), EventEncoding.ARRAY, 100_000);
        KvEventPublisher p = new KvEventPublisher(config, "test", declared::get, new SimpleMeterRegistry());
        try (TestSubscriber sub = new TestSubscriber(p.endpoint(), p.replayEndpoint())) {
            BlockKey key = EventedEngine.key("n", 1);
            p.copyAdded(TierId.DRAM, new BlockRecord(key, null, 4096, 0));
            awaitTrue(() -> p.lastSeq() >= 0, "store published");
            // BlockService.deleteNamespace: engine.deleteNamespace (removals offered), namespaces.remove; then
            // PUT /v1/namespaces/n with another model, all within one batch interval
            p.copyRemoved(TierId.DRAM, key, 4096);
            declared.remove("n");
            declared.put("n", new NamespaceTopics.Declared("m2", 16));
            awaitTrue(() -> p.lastSeq() >= 1, "removal published");
            EventLedger ledger = new EventLedger();
            ledger.apply(sub.replay(0));
            assertThat(ledger.errors).isEmpty();
            assertThat(ledger.held("kv@test@m1", "CPU")).as("old topic's view").isEmpty();
        } finally {
            p.close();
        }
    }

    /**
     * A replay of a full ring when replay-size exceeds the ROUTER's send high-water mark (max(hwm, 1000)):
     * the ROUTER drops what does not fit, so the subscriber gets a silently truncated answer (or no end mark).
     */
    @Test
    void aFullRingReplayIsAnsweredWhole() throws Exception {
        EventsProperties config = new EventsProperties(
                true,
                "tcp://127.0.0.1:*",
                "tcp://127.0.0.1:*",
                "kv@{host}@{model}",
                20_000,
                100_000,
                Duration.ofMillis(200),
                1,
                1000,
                EventEncoding.ARRAY,
                0,
                new EventsProperties.Medium("GPU", "CPU", "DISK"));
        KvEventPublisher p =
                new KvEventPublisher(config, "test", EventedEngine.DECLARED::get, new SimpleMeterRegistry());
        try (TestSubscriber sub = new TestSubscriber(p.endpoint(), p.replayEndpoint())) {
            for (int i = 0; i < 20_000; i++) {
                p.copyAdded(TierId.DRAM, new BlockRecord(EventedEngine.key("a", i), null, 4096, 0));
            }
            awaitTrue(() -> p.lastSeq() >= 19_999, "published");
            assertThat(sub.replay(0)).hasSize(20_000);
        } finally {
            p.close();
        }
    }

    /**
     * Through the engine, as BlockService.deleteNamespace and a later PUT /v1/namespaces/n do: the removals of
     * the deleted namespace go out on its old model's topic, the stores after the new declaration on the new one.
     */
    @Test
    void aNamespaceDeletedAndDeclaredAgainKeepsBothTopicsRight() throws Exception {
        Map<String, NamespaceTopics.Declared> declared = new ConcurrentHashMap<>();
        declared.put("n", new NamespaceTopics.Declared("m1", 16));
        try (EventedEngine e = new EventedEngine(
                        EventedEngine.config(1000, Duration.ofMillis(1000), EventEncoding.ARRAY, 100_000),
                        16 * 1024,
                        64,
                        64,
                        declared::get);
                TestSubscriber sub = new TestSubscriber(e.publisher.endpoint(), e.publisher.replayEndpoint())) {
            e.store("n", 0);
            e.store("n", 1);
            e.awaitPublished(WAIT);
            e.engine.deleteNamespace("n");
            declared.remove("n");
            declared.put("n", new NamespaceTopics.Declared("m2", 16));
            BlockKey again = e.store("n", 5);
            e.awaitPublished(WAIT);
            EventLedger ledger = new EventLedger();
            ledger.apply(sub.replay(0));
            assertThat(ledger.errors).isEmpty();
            assertThat(ledger.held("kv@test@m1", "GPU")).as("old model's topic").isEmpty();
            assertThat(ledger.held("kv@test@m2", "GPU"))
                    .as("new model's topic")
                    .containsExactly(again.hash().lastLong());
        }
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, String what)
            throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() < deadline).as(what).isTrue();
            Thread.sleep(5);
        }
    }

    private static long timeStores(EventedEngine e, String namespace, int blocks) throws Exception {
        long start = System.nanoTime();
        for (int i = 0; i < blocks; i++) {
            e.store(namespace, i);
        }
        return System.nanoTime() - start;
    }
}
