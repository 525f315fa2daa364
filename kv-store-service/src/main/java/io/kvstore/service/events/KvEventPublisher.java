package io.kvstore.service.events;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.BlockInfo;
import io.kvstore.engine.EngineEvents;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes every copy the engine adds to or removes from a tier as a vLLM KV event, so KV-aware routers
 * count kvstore's blocks. The engine's threads only offer a change to a bounded queue ({@link #copyAdded},
 * {@link #copyRemoved}: no lock held long, no I/O, never a wait); one publisher thread gathers changes for
 * {@code batchInterval}, cuts them into batches per namespace topic in the order they happened, encodes,
 * sends them on the PUB socket, keeps them for replay and answers replay requests.
 *
 * <p>When the queue is full a change is dropped and counted; once what was queued before has gone out, the
 * publisher sends {@code AllBlocksCleared} on every topic it has used, so subscribers start again from an
 * empty view instead of keeping a wrong one, and then re-announces what each tier still holds: a
 * {@code BlockStored} per copy in the catalog, a few batches per round on the publisher thread, between the
 * live changes (never on a storing thread), each block after its parent (a router drops a block whose parent
 * it does not know). Changes made while the catalog is read go out after it, so a
 * subscriber that applies the stream in order ends with the catalog's view again; a live store whose parent
 * has not gone out yet waits for it, and a block whose parent the catalog no longer holds is not announced
 * (docs/events.md, "re-announcement").
 */
public final class KvEventPublisher implements EngineEvents, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KvEventPublisher.class);

    /** Event shapes the publisher keeps encoded across rounds, at most. */
    static final int MAX_SHAPES = 4096;

    /** Copies re-announced per publisher round after a clear: paced so that live changes keep flowing. */
    static final int RESYNC_PER_ROUND = 2048;

    private final EventsProperties config;
    /**
     * Lock-free and allocation-free: a lock here could park a storing thread behind a descheduled publisher
     * thread that held it.
     */
    private final ChangeRing queue;

    private final AtomicBoolean overflowed = new AtomicBoolean();
    private final AtomicLong lastSeq = new AtomicLong(-1);
    /**
     * Changes taken off the queue (for tests: with {@code dropped}, at least what was offered; a live store refused
     * by {@link #waiting} counts in both).
     */
    private final AtomicLong handled = new AtomicLong();

    private final Map<TierId, String> medium = new EnumMap<>(TierId.class);
    private final NamespaceTopics topics;
    private final KvEventCodec codec;
    private final ReplayRing ring;
    private final EventSockets sockets;
    private final Counter published;
    private final Counter batches;
    private final Counter dropped;
    private final Counter clears;
    private final Counter replays;
    private final Counter resynced;
    private final Thread thread;
    /** Where re-announcements read what the tiers hold; set once the engine exists. */
    private volatile @Nullable Supplier<Iterator<BlockInfo>> catalog;
    /** What the catalog holds of a block now, or null: a re-announced block's parent is looked up in it. */
    private volatile Function<BlockKey, @Nullable BlockInfo> lookup = key -> null;
    /** The re-announcement under way (publisher thread only), null when none. */
    private @Nullable Iterator<BlockInfo> resync;
    /**
     * What the re-announcement under way (and the live stores meanwhile) told subscribers of each block, so that
     * one reached again (as an ancestor, or by the catalog's iterator after its child) goes out once; emptied
     * when it ends. Publisher thread only.
     */
    private final AnnouncedBlocks announced = new AnnouncedBlocks();
    /**
     * Live stores of children whose parent is not re-announced yet (publisher thread only), at most as many as the
     * queue holds: past that a store is dropped and the re-announcement starts over, as after an overflow.
     */
    private final WaitingStores waiting;
    /** A block and its ancestors not yet re-announced, the root on top (publisher thread only). */
    private final ArrayDeque<BlockInfo> chain = new ArrayDeque<>();

    private volatile boolean resyncPending;
    /** An AllBlocksCleared went out before {@link #resyncFrom}: re-announce once the catalog is there. */
    private boolean resyncOwed;
    /** The batch being filled on the publisher thread. */
    private final Batcher batcher;

    private volatile boolean running = true;

    public KvEventPublisher(
            EventsProperties config,
            String host,
            java.util.function.Function<String, NamespaceTopics.Declared> declarations,
            MeterRegistry registry) {
        this.config = config;
        medium.put(TierId.HBM, config.medium().hbm());
        medium.put(TierId.DRAM, config.medium().dram());
        medium.put(TierId.NVME, config.medium().nvme());
        this.topics = new NamespaceTopics(config.topic(), host, declarations);
        this.codec = new KvEventCodec(config.encoding());
        this.batcher = new Batcher();
        this.ring = new ReplayRing(config.replaySize());
        this.queue = new ChangeRing(config.queueSize());
        this.waiting = new WaitingStores(config.queueSize());
        this.published = Counter.builder("kvstore.events.published")
                .description("KV events published (one per block stored into or removed from a tier)")
                .register(registry);
        this.batches = Counter.builder("kvstore.events.batches")
                .description("KV event batches published")
                .register(registry);
        this.dropped = Counter.builder("kvstore.events.dropped")
                .description("Block changes dropped because the event queue was full")
                .register(registry);
        this.clears = Counter.builder("kvstore.events.cleared")
                .description("AllBlocksCleared events sent after drops")
                .register(registry);
        this.replays = Counter.builder("kvstore.events.replay.requests")
                .description("Replay requests answered")
                .register(registry);
        this.resynced = Counter.builder("kvstore.events.resynced")
                .description("BlockStored events re-announcing what the tiers hold after AllBlocksCleared")
                .register(registry);
        Gauge.builder("kvstore.events.queued", queue, ChangeRing::size)
                .description("Block changes waiting to be published")
                .register(registry);
        this.sockets = new EventSockets(config.endpoint(), config.replayEndpoint(), config.hwm(), config.replaySize());
        this.thread = Thread.ofPlatform().name("kv-events").daemon().unstarted(this::run);
        thread.start();
        log.info(
                "KV events: publishing on {} (replay {}), topic '{}', {} encoding, replay of {} batches",
                sockets.pubEndpoint(),
                sockets.replayEndpoint().isEmpty() ? "off" : sockets.replayEndpoint(),
                config.topic(),
                config.encoding().name().toLowerCase(java.util.Locale.ROOT),
                config.replaySize());
    }

    /**
     * Lets the publisher read what the tiers hold, to re-announce it after an {@code AllBlocksCleared}; without
     * it (before the engine exists) a clear is not followed by re-announcements.
     */
    public void resyncFrom(Supplier<Iterator<BlockInfo>> blocks, Function<BlockKey, @Nullable BlockInfo> lookup) {
        this.lookup = lookup;
        this.catalog = blocks;
    }

    @Override
    public void copyAdded(TierId tier, BlockRecord block) {
        if (!queue.offer(tier, block.key(), block.parent(), true)) {
            overflow();
        }
    }

    @Override
    public void copyRemoved(TierId tier, BlockKey key, int length) {
        if (!queue.offer(tier, key, null, false)) {
            overflow();
        }
    }

    @Override
    public void namespaceDeleted(String namespace) {
        if (!queue.offerNamespaceDeleted(namespace)) {
            overflow();
        }
    }

    private void overflow() {
        overflowed.set(true); // before the count: whoever sees the drop counted sees a re-announcement pending
        dropped.increment();
    }

    private void run() {
        long intervalMillis = Math.max(1, config.batchInterval().toMillis());
        while (running || !queue.isEmpty()) {
            try {
                replays.increment(sockets.awaitReplay(intervalMillis, ring));
                boolean dropsBefore = overflowed.get();
                if (dropsBefore) {
                    resyncPending = true;
                    overflowed.set(false);
                }
                batcher.begin();
                int n = queue.drain(batcher, config.queueSize());
                batcher.flush();
                handled.addAndGet(n);
                if (dropsBefore) {
                    clearAll();
                    topics.forgetAll(); // a dropped namespaceDeleted mark must not pin an old declaration
                    resync = null;
                    announced.clear();
                    waiting.clear();
                    chain.clear();
                    resyncOwed = true;
                }
                if (resyncOwed) {
                    Supplier<Iterator<BlockInfo>> source = catalog;
                    if (source != null) {
                        resync = source.get(); // (again) from the start: the view is empty
                        resyncOwed = false;
                    }
                    resyncPending = resync != null || resyncOwed;
                }
                if (resync != null && running && !overflowed.get()) { // else a clear comes first next round
                    reannounce(resync);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                if (!running) {
                    return; // sockets closed under us at shutdown
                }
                log.error("KV events: publishing failed, continuing", e);
            }
        }
    }

    /**
     * Announces the next {@link #RESYNC_PER_ROUND} copies of {@code blocks} (and the rest of a chain begun),
     * each block after those of its ancestors the catalog holds (the catalog's order is its map's, a child
     * before its parent as often as not), and the live stores that waited for it; ends the re-announcement at
     * its end. A chain is finished in the round it began: read from the catalog then, its blocks must go out
     * before live changes made since.
     */
    private void reannounce(Iterator<BlockInfo> blocks) {
        batcher.begin();
        int n = 0;
        while (!chain.isEmpty() || (n < RESYNC_PER_ROUND && blocks.hasNext())) {
            if (chain.isEmpty()) {
                trace(blocks.next());
                continue;
            }
            BlockInfo b = chain.pop();
            for (TierId tier : b.tiers()) {
                batcher.stored(tier, b);
                n++;
            }
            String namespace = b.key().namespace();
            long hash = b.key().hash().lastLong();
            announced.mark(namespace, hash, AnnouncedBlocks.KNOWN | AnnouncedBlocks.REANNOUNCED);
            releaseChildren(namespace, hash);
        }
        batcher.flush();
        resynced.increment(n);
        if (chain.isEmpty() && !blocks.hasNext()) {
            int orphans = waiting.size();
            resync = null;
            announced.clear();
            waiting.clear();
            resyncPending = false;
            log.info(
                    "KV events: re-announced what the tiers hold after AllBlocksCleared ({} live stores of blocks"
                            + " whose parent is gone not sent)",
                    orphans);
        }
    }

    /**
     * Pushes {@code block} and those of its ancestors subscribers have not been told of onto {@link #chain},
     * the root on top; nothing when the block was re-announced already, or when an ancestor's parent is not in
     * the catalog (an orphaned chain: a router would reject it, docs/events.md).
     */
    private void trace(BlockInfo block) {
        String namespace = block.key().namespace();
        if (announced.has(
                namespace, block.key().hash().lastLong(), AnnouncedBlocks.REANNOUNCED | AnnouncedBlocks.ORPHANED)) {
            return;
        }
        chain.push(block);
        for (BlockInfo top = block; ; ) {
            BlockHash parent = top.parent();
            if (parent == null) {
                return;
            }
            int flags = announced.flags(namespace, parent.lastLong());
            if ((flags & AnnouncedBlocks.KNOWN) != 0) {
                return;
            }
            BlockInfo p =
                    (flags & AnnouncedBlocks.ORPHANED) != 0 ? null : lookup.apply(new BlockKey(namespace, parent));
            if (p == null) {
                for (BlockInfo orphan : chain) {
                    announced.mark(namespace, orphan.key().hash().lastLong(), AnnouncedBlocks.ORPHANED);
                }
                chain.clear();
                return;
            }
            chain.push(p);
            top = p;
        }
    }

    /**
     * A live change while a re-announcement is under way: a store whose parent subscribers have not been told
     * of waits for it (a router would drop it, and the catalog's iterator may not return a block stored after
     * it began); a removal forgets the store of its copy that waits.
     */
    private void live(TierId tier, String namespace, long hash, boolean hasParent, long parent, boolean stored) {
        if (!stored) {
            waiting.cancel(namespace, hash, tier);
            batcher.emit(tier, namespace, hash, false, 0, false);
            return;
        }
        if (hasParent && !announced.has(namespace, parent, AnnouncedBlocks.KNOWN)) {
            if (!waiting.add(namespace, parent, tier, hash)) {
                overflow(); // as many wait as the queue holds: start over rather than hold the heap
            }
            return;
        }
        batcher.emit(tier, namespace, hash, hasParent, parent, true);
        announced.mark(namespace, hash, AnnouncedBlocks.KNOWN);
        releaseChildren(namespace, hash);
    }

    /** Sends the live stores that waited for {@code parent}, and those that waited for them. */
    private void releaseChildren(String namespace, long parent) {
        if (waiting.isEmpty()) {
            return; // as a rule: no key and no stack made for each block re-announced
        }
        ArrayDeque<Long> parents = new ArrayDeque<>();
        for (long p = parent; ; p = parents.pop()) {
            List<WaitingStores.Waiting> children = waiting.release(namespace, p);
            if (children != null) {
                for (WaitingStores.Waiting c : children) {
                    batcher.emit(c.tier(), namespace, c.hash(), true, p, true);
                    announced.mark(namespace, c.hash(), AnnouncedBlocks.KNOWN);
                    parents.push(c.hash());
                }
            }
            if (parents.isEmpty()) {
                return;
            }
        }
    }

    /**
     * Cuts changes into batches, in order: a new one at each change of topic or at {@code maxBatchEvents}.
     * Publisher thread only.
     */
    private final class Batcher implements ChangeRing.Sink {
        /** What each namespace resolved to this round, with its events' shape per tier. */
        private final Map<String, Target> targets = new HashMap<>();

        private final KvEventCodec.BatchWriter writer = codec.writer();
        private byte @Nullable [] topic;

        /** The target of the change before, checked first: changes come in runs of one namespace. */
        private @Nullable Target last;

        /**
         * Shapes by what they encode, kept across rounds (targets are resolved again each round): encoding a
         * shape takes msgpack-java's packer and its 8 KiB buffer, once per kind of event rather than once per
         * round. Cleared when it grows past {@link #MAX_SHAPES} (as many namespace configurations as that).
         */
        private final Map<List<@Nullable Object>, KvEventCodec.Shape> shapes = new HashMap<>();

        KvEventCodec.Shape shape(
                String medium, int blockSize, @Nullable String loraName, @Nullable List<Object> extra) {
            List<@Nullable Object> key = Arrays.asList(medium, blockSize, loraName, extra);
            KvEventCodec.Shape s = shapes.get(key);
            if (s == null) {
                if (shapes.size() >= MAX_SHAPES) {
                    shapes.clear();
                }
                s = codec.shape(medium, blockSize, loraName, extra);
                shapes.put(key, s);
            }
            return s;
        }

        void begin() {
            targets.clear(); // one resolution per round: a namespace declared meanwhile shows from the next
            last = null;
        }

        @Override
        public void namespaceDeleted(String namespace) {
            targets.remove(namespace);
            last = null;
            topics.forget(namespace);
            // its removals went out before this mark: subscribers know none of its blocks, and a store waiting for
            // a parent of the old declaration waits for nothing
            announced.forget(namespace);
            waiting.forget(namespace);
        }

        @Override
        public void accept(TierId tier, String namespace, long hash, boolean hasParent, long parent, boolean stored) {
            if (resync != null) {
                live(tier, namespace, hash, hasParent, parent, stored);
            } else {
                emit(tier, namespace, hash, hasParent, parent, stored);
            }
        }

        /** Adds a change to the batch. */
        void emit(TierId tier, String namespace, long hash, boolean hasParent, long parent, boolean stored) {
            Target target = last;
            if (target == null || !target.namespace.equals(namespace)) {
                target = targets.get(namespace);
                if (target == null) {
                    target = new Target(namespace, topics.resolve(namespace));
                    targets.put(namespace, target);
                }
                last = target;
            }
            byte[] next = target.resolved.topic();
            if (topic != null && (!Arrays.equals(next, topic) || writer.count() >= config.maxBatchEvents())) {
                flush();
            }
            topic = next;
            KvEventCodec.Shape shape = target.shape(tier);
            if (stored) {
                writer.stored(shape, hash, hasParent, parent);
            } else {
                writer.removed(shape, hash);
            }
        }

        /** Announces that {@code tier} holds {@code block}. */
        void stored(TierId tier, BlockInfo block) {
            BlockHash parent = block.parent();
            emit(
                    tier,
                    block.key().namespace(),
                    block.key().hash().lastLong(),
                    parent != null,
                    parent == null ? 0 : parent.lastLong(),
                    true);
        }

        void flush() {
            if (topic != null && writer.count() > 0) {
                int n = writer.count();
                send(topic, writer.finish(now(), config.dataParallelRank()), n);
            }
            topic = null;
        }
    }

    /** A namespace's topic and the shape of its events in each tier, made on first use. */
    private final class Target {
        final String namespace;
        final NamespaceTopics.Resolved resolved;
        private final KvEventCodec.@Nullable Shape[] shapes = new KvEventCodec.Shape[TierId.values().length];

        Target(String namespace, NamespaceTopics.Resolved resolved) {
            this.namespace = namespace;
            this.resolved = resolved;
        }

        KvEventCodec.Shape shape(TierId tier) {
            KvEventCodec.Shape s = shapes[tier.ordinal()];
            if (s == null) {
                s = batcher.shape(medium.get(tier), resolved.blockSize(), resolved.loraName(), resolved.extraKeys());
                shapes[tier.ordinal()] = s;
            }
            return s;
        }
    }

    private void clearAll() {
        int n = 0;
        for (byte[] topic : topics.topics()) {
            send(topic, codec.encode(now(), List.of(new KvEvent.AllBlocksCleared()), config.dataParallelRank()), 1);
            n++;
        }
        clears.increment(n);
        log.warn(
                "KV events: the queue of {} overflowed, or as many live stores waited for their parents during a"
                        + " re-announcement; sent AllBlocksCleared on {} topic(s), re-announcing what the tiers hold",
                config.queueSize(),
                n);
    }

    private static double now() {
        return System.currentTimeMillis() / 1000.0;
    }

    private void send(byte[] topic, byte[] payload, int events) {
        long seq = lastSeq.get() + 1;
        sockets.publish(topic, seq, payload);
        ring.add(new ReplayRing.Published(topic, seq, payload));
        lastSeq.set(seq);
        batches.increment();
        published.increment(events);
    }

    /** The bound PUB address (the real port when the endpoint asked for any). */
    public String endpoint() {
        return sockets.pubEndpoint();
    }

    /** The bound ROUTER address, empty without replay. */
    public String replayEndpoint() {
        return sockets.replayEndpoint();
    }

    /** Sequence number of the last batch sent, -1 before the first. */
    public long lastSeq() {
        return lastSeq.get();
    }

    /** Changes published so far. */
    long handled() {
        return handled.get();
    }

    /** True from an {@code AllBlocksCleared} until what the tiers held has been re-announced. */
    boolean resyncPending() {
        return overflowed.get() || resyncPending;
    }

    public boolean running() {
        return thread.isAlive();
    }

    public EventsProperties config() {
        return config;
    }

    /** Publishes what is queued, then closes the sockets. */
    @Override
    public void close() {
        running = false;
        try {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        sockets.close();
    }
}
