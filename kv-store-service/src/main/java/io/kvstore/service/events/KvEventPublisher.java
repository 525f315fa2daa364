package io.kvstore.service.events;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
 * empty view (which may miss blocks, never claims one that is gone) instead of keeping a wrong one.
 */
public final class KvEventPublisher implements EngineEvents, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KvEventPublisher.class);

    /** A change as the engine reported it; turned into an event on the publisher thread. */
    private record Change(TierId tier, BlockKey key, BlockHash parent, boolean stored) {}

    private final EventsProperties config;
    /**
     * Lock-free, bounded by {@link #queued}: a lock here could park a storing thread behind a descheduled
     * publisher thread that held it.
     */
    private final ConcurrentLinkedQueue<Change> queue = new ConcurrentLinkedQueue<>();

    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicBoolean overflowed = new AtomicBoolean();
    private final AtomicLong lastSeq = new AtomicLong(-1);
    /** Changes taken off the queue and published (for tests: published + dropped = offered). */
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
    private final Thread thread;
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
        this.ring = new ReplayRing(config.replaySize());
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
        Gauge.builder("kvstore.events.queued", queued, AtomicInteger::get)
                .description("Block changes waiting to be published")
                .register(registry);
        this.sockets = new EventSockets(config.endpoint(), config.replayEndpoint(), config.hwm());
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

    @Override
    public void copyAdded(TierId tier, BlockRecord block) {
        offer(new Change(tier, block.key(), block.parent(), true));
    }

    @Override
    public void copyRemoved(TierId tier, BlockKey key, int length) {
        offer(new Change(tier, key, null, false));
    }

    private void offer(Change change) {
        if (queued.get() >= config.queueSize()) { // may overshoot by the threads offering at once
            dropped.increment();
            overflowed.set(true);
        } else {
            queue.offer(change);
            queued.incrementAndGet();
        }
    }

    private void run() {
        long intervalMillis = Math.max(1, config.batchInterval().toMillis());
        List<Change> drained = new ArrayList<>();
        while (running || !queue.isEmpty()) {
            try {
                replays.increment(sockets.awaitReplay(intervalMillis, ring));
                boolean dropsBefore = overflowed.getAndSet(false);
                drained.clear();
                Change c;
                while (drained.size() < config.queueSize() && (c = queue.poll()) != null) {
                    drained.add(c);
                    queued.decrementAndGet();
                }
                publish(drained);
                if (dropsBefore) {
                    clearAll();
                }
                handled.addAndGet(drained.size());
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

    /** Cuts {@code changes} into batches: a new one at each change of topic or at {@code maxBatchEvents}. */
    private void publish(List<Change> changes) {
        byte[] topic = null;
        List<KvEvent> events = new ArrayList<>();
        Map<String, NamespaceTopics.Resolved> resolved = new java.util.HashMap<>(); // one look-up per round
        for (Change c : changes) {
            NamespaceTopics.Resolved ns = resolved.computeIfAbsent(c.key().namespace(), topics::resolve);
            if (topic != null
                    && (!java.util.Arrays.equals(ns.topic(), topic) || events.size() >= config.maxBatchEvents())) {
                send(topic, events);
                events = new ArrayList<>();
            }
            topic = ns.topic();
            long hash = KvEventCodec.wireHash(c.key().hash().toBytes());
            String m = medium.get(c.tier());
            if (c.stored()) {
                Long parent = c.parent() == null
                        ? null
                        : KvEventCodec.wireHash(c.parent().toBytes());
                events.add(new KvEvent.BlockStored(hash, parent, ns.blockSize(), m));
            } else {
                events.add(new KvEvent.BlockRemoved(hash, m));
            }
        }
        if (topic != null) {
            send(topic, events);
        }
    }

    private void clearAll() {
        int n = 0;
        for (byte[] topic : topics.topics()) {
            send(topic, List.of(new KvEvent.AllBlocksCleared()));
            n++;
        }
        clears.increment(n);
        log.warn("KV events: the queue of {} overflowed; sent AllBlocksCleared on {} topic(s)", config.queueSize(), n);
    }

    private void send(byte[] topic, List<KvEvent> events) {
        long seq = lastSeq.get() + 1;
        byte[] payload = codec.encode(System.currentTimeMillis() / 1000.0, events, config.dataParallelRank());
        sockets.publish(topic, seq, payload);
        ring.add(new ReplayRing.Published(topic, seq, payload));
        lastSeq.set(seq);
        batches.increment();
        published.increment(events.size());
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
