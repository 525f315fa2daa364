package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.BlockInfo;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * What a router sees while the publisher re-announces the catalog after {@code AllBlocksCleared}: never a
 * {@code BlockStored} whose parent it has not been told of since the clear (Dynamo's indexer rejects one with
 * {@code ParentBlockNotFound}), whether the block comes from the catalog or live between re-announcement rounds;
 * a block whose parent the catalog no longer holds is not announced at all.
 */
class KvEventReannouncementTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String TOPIC = "kv@test@model-a";

    /**
     * The parent sits at the end of a catalog that takes several rounds to re-announce; its child is stored
     * (live, after the catalog's iterator began, so the iterator does not return it) between two rounds.
     */
    @Test
    void aChildStoredLiveDuringTheReannouncementGoesOutAfterItsParent() throws Exception {
        int roots = 4 * KvEventPublisher.RESYNC_PER_ROUND;
        BlockInfo parent = info(EventedEngine.key("a", 0), null, TierId.NVME);
        BlockKey child = EventedEngine.key("a", 1);
        Map<BlockKey, BlockInfo> held = new ConcurrentHashMap<>();
        List<BlockInfo> order = new ArrayList<>();
        for (int i = 0; i < roots; i++) {
            BlockInfo root = info(EventedEngine.key("a", 1000 + i), null, TierId.NVME);
            order.add(root);
            held.put(root.key(), root);
        }
        order.add(parent);
        held.put(parent.key(), parent);
        try (Harness h = new Harness()) {
            h.overflow(order);
            h.p.resyncFrom(
                    () -> new Hooked(order.iterator(), KvEventPublisher.RESYNC_PER_ROUND, () -> {
                        // a store while the second round reads the catalog: drained live in the third
                        held.put(child, info(child, parent.key().hash(), TierId.HBM));
                        h.p.copyAdded(
                                TierId.HBM, new BlockRecord(child, parent.key().hash(), 4096, 0));
                    }),
                    held::get);
            h.awaitResynced(65);
            View view = View.of(h.sub.replay(0));
            assertThat(view.unknownParent).as("stored before their parent").isEmpty();
            assertThat(view.stored)
                    .as("parent and child known at the end")
                    .contains(parent.key().hash().lastLong(), child.hash().lastLong())
                    .hasSize(roots + 2);
        }
    }

    /**
     * Live stores waiting for their parent are held on the publisher's heap; a fast engine storing children of
     * blocks the re-announcement has not reached would grow them without end. Past as many as the queue holds (16
     * here) a store is dropped instead, counted, and the publisher starts over with {@code AllBlocksCleared} and a
     * fresh re-announcement, so the router still ends with the catalog's view and never sees a child before its
     * parent.
     */
    @Test
    void moreWaitingStoresThanTheQueueHoldsStartTheReannouncementOver() throws Exception {
        int roots = 4 * KvEventPublisher.RESYNC_PER_ROUND;
        int perRound = 12; // fits the queue of 16; two rounds' worth pass the cap
        BlockInfo parent = info(EventedEngine.key("a", 0), null, TierId.NVME);
        Map<BlockKey, BlockInfo> held = new ConcurrentHashMap<>();
        List<BlockInfo> catalog = new CopyOnWriteArrayList<>();
        for (int i = 0; i < roots; i++) {
            BlockInfo root = info(EventedEngine.key("a", 1000 + i), null, TierId.NVME);
            catalog.add(root);
            held.put(root.key(), root);
        }
        catalog.add(parent);
        held.put(parent.key(), parent);
        AtomicInteger next = new AtomicInteger(1);
        try (Harness h = new Harness()) {
            h.overflow(catalog);
            long droppedBefore = h.dropped();
            AtomicBoolean hooked = new AtomicBoolean();
            Runnable storeChildren = () -> {
                // children of the last block, stored live while the re-announcement reads the roots (first one only)
                for (int i = 0; i < perRound; i++) {
                    BlockInfo child = info(
                            EventedEngine.key("a", next.getAndIncrement()),
                            parent.key().hash(),
                            TierId.HBM);
                    held.put(child.key(), child);
                    catalog.add(child);
                    h.p.copyAdded(
                            TierId.HBM,
                            new BlockRecord(child.key(), parent.key().hash(), 4096, 0));
                }
            };
            h.p.resyncFrom(
                    () -> {
                        Iterator<BlockInfo> snapshot = List.copyOf(catalog).iterator();
                        return hooked.getAndSet(true)
                                ? snapshot
                                : new Hooked(
                                        new Hooked(snapshot, KvEventPublisher.RESYNC_PER_ROUND, storeChildren),
                                        2 * KvEventPublisher.RESYNC_PER_ROUND,
                                        storeChildren);
                    },
                    held::get);
            h.awaitResynced(64 + 2 * perRound);
            assertThat(h.dropped()).as("stores past the cap counted as dropped").isGreaterThan(droppedBefore);
            assertThat(h.registry.get("kvstore.events.cleared").counter().count())
                    .as("AllBlocksCleared after the first overflow and after the cap")
                    .isGreaterThanOrEqualTo(2);
            View view = View.of(h.sub.replay(0));
            assertThat(view.unknownParent).as("stored before their parent").isEmpty();
            assertThat(view.stored)
                    .as("the catalog's view at the end")
                    .containsExactlyInAnyOrderElementsOf(
                            held.keySet().stream().map(k -> k.hash().lastLong()).toList());
        }
    }

    /**
     * A block whose parent was evicted: announced with that parent, a router rejects it and its descendants;
     * announced as a first block, a router would match requests that do not share its prefix.
     */
    @Test
    void aBlockWhoseParentIsGoneIsNotReannouncedNorAreItsDescendants() throws Exception {
        BlockInfo root = info(EventedEngine.key("a", 0), null, TierId.DRAM);
        BlockInfo kept = info(EventedEngine.key("a", 1), root.key().hash(), TierId.DRAM);
        BlockHash evicted = EventedEngine.key("a", 2).hash();
        BlockInfo orphan = info(EventedEngine.key("a", 3), evicted, TierId.DRAM);
        BlockInfo grandchild = info(EventedEngine.key("a", 4), orphan.key().hash(), TierId.DRAM);
        List<BlockInfo> order = List.of(grandchild, orphan, kept, root);
        Map<BlockKey, BlockInfo> held = new ConcurrentHashMap<>();
        order.forEach(b -> held.put(b.key(), b));
        try (Harness h = new Harness()) {
            h.overflow(order);
            h.p.resyncFrom(order::iterator, held::get);
            h.awaitResynced(64);
            View view = View.of(h.sub.replay(0));
            assertThat(view.unknownParent)
                    .as("stored with a parent the router never saw")
                    .isEmpty();
            assertThat(view.stored)
                    .containsExactlyInAnyOrder(
                            root.key().hash().lastLong(), kept.key().hash().lastLong());
        }
    }

    private static BlockInfo info(BlockKey key, @Nullable BlockHash parent, TierId tier) {
        return new BlockInfo(key, parent, 4096, 0, Set.of(tier), 0, 0);
    }

    /** A publisher without a catalog yet, a subscriber on it, and a way to overflow its queue of 16. */
    private static final class Harness implements AutoCloseable {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final KvEventPublisher p = new KvEventPublisher(
                EventedEngine.config(16, Duration.ofMillis(20), EventEncoding.ARRAY, 100_000),
                "test",
                EventedEngine.DECLARED::get,
                registry);
        final TestSubscriber sub = new TestSubscriber(p.endpoint(), p.replayEndpoint());

        /** Offers more stores than the queue holds and waits for the clear that follows. */
        void overflow(List<BlockInfo> blocks) throws InterruptedException {
            for (int i = 0; i < 64; i++) {
                BlockInfo b = blocks.get(i % blocks.size());
                p.copyAdded(b.tiers().iterator().next(), new BlockRecord(b.key(), b.parent(), 4096, 0));
            }
            await(() -> registry.get("kvstore.events.cleared").counter().count() > 0, "cleared");
        }

        /** Waits until {@code offered} changes are published or dropped and the re-announcement has ended. */
        void awaitResynced(int offered) throws InterruptedException {
            await(() -> !p.resyncPending() && p.handled() + dropped() >= offered, "re-announced");
        }

        long dropped() {
            return (long) registry.get("kvstore.events.dropped").counter().count();
        }

        @Override
        public void close() throws InterruptedException {
            sub.close();
            p.close();
        }
    }

    /** The catalog's iterator, running {@code hook} when the publisher asks for element {@code at}. */
    private static final class Hooked implements Iterator<BlockInfo> {
        private final Iterator<BlockInfo> blocks;
        private final int at;
        private final Runnable hook;
        private int next;

        Hooked(Iterator<BlockInfo> blocks, int at, Runnable hook) {
            this.blocks = blocks;
            this.at = at;
            this.hook = hook;
        }

        @Override
        public boolean hasNext() {
            return blocks.hasNext();
        }

        @Override
        public BlockInfo next() {
            if (next++ == at) {
                hook.run();
            }
            return blocks.next();
        }
    }

    /** A router's view of the stream since the last clear, on {@link #TOPIC}. */
    private record View(Set<Long> stored, List<String> unknownParent) {
        static View of(List<DecodedBatch> stream) {
            View v = new View(new HashSet<>(), new ArrayList<>());
            for (DecodedBatch b : stream) {
                if (!b.topic().equals(TOPIC)) {
                    continue;
                }
                for (DecodedBatch.Event ev : b.events()) {
                    switch (ev.type()) {
                        case "AllBlocksCleared" -> {
                            v.stored.clear();
                            v.unknownParent.clear();
                        }
                        case "BlockStored" -> {
                            if (ev.parent() != null && !v.stored.contains(ev.parent())) {
                                v.unknownParent.add(Long.toHexString(ev.hashes().getFirst()));
                            }
                            v.stored.addAll(ev.hashes());
                        }
                        case "BlockRemoved" -> ev.hashes().forEach(v.stored::remove);
                        default -> {}
                    }
                }
            }
            return v;
        }
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() < deadline).as(what).isTrue();
            Thread.sleep(5);
        }
    }
}
