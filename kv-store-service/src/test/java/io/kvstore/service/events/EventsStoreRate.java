package io.kvstore.service.events;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.ffm.libc.CpuAffinity;
import io.kvstore.ffm.libc.PosixException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Not a test: {@code bench/events.sh} runs it. Stores/s of 4 KiB blocks into a DRAM tier by {@code threads}
 * threads, with KV events off and on (a publisher on loopback and a subscriber receiving every batch), in
 * alternating rounds of one run (off first, then on first, and so on), so both see the same machine state:
 * one engine, its events switched between rounds, so both kinds store into the same tier memory and catalog.
 * The blocks come as prompts of 64, each chained to the one before, so stored events carry a parent.
 *
 * <p>Between rounds it waits until the publisher has sent every change of the round before (the stores,
 * then the removals of the namespace delete), so no round pays for an earlier one's events. The subscriber
 * is a Python process (pyzmq), as a router would be, so the JVM's CPU time is the service's alone. Besides
 * stores/s it reports CPU time per store, which a busy 2-CPU machine disturbs far less than the wall clock:
 * on the storing threads (the data path's own cost of events) and on the publisher thread and JeroMQ's I/O
 * thread (what events cost a machine with no spare CPU; the garbage collector's share, mostly the batches
 * the replay ring keeps, is not in it).
 *
 * <p>With {@code pinned} as the fourth argument the storing threads get CPUs of their own (storing thread
 * {@code i} runs on CPU {@code i}) and every other thread of the JVM (the publisher, JeroMQ's I/O thread, the
 * JIT and the garbage collector) and the subscriber process run on the CPUs left, as on a server with cores
 * to spare; both kinds of round run so. It needs more CPUs than storing threads.
 */
public final class EventsStoreRate {

    private static final int BLOCK = 4096;
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    /**
     * One timed round: stores/s, CPU nanoseconds per store on each kind of thread, and the garbage collector's
     * stop-the-world pauses that fell inside it (count and milliseconds); {@code waitedMillis} is how long the
     * storing threads (on average) were ready to run but waited for a CPU that another process or thread held
     * (the kernel's run-queue delay, {@code /proc/thread-self/schedstat}), and {@code availableRate} the stores/s
     * over the round's wall time less that wait: what the round would have done on a CPU of its own. On this
     * shared machine other sessions' builds take CPU 0 from the pinned storing thread at random, and more so
     * in events-on rounds, whose publisher and subscriber keep CPU 1 busy so the kernel puts foreign tasks on
     * CPU 0; garbage-collection pauses stay in it (a stopped thread is not waiting for a CPU).
     */
    private record Round(
            double rate,
            double storeCpu,
            double publisherCpu,
            long pauses,
            long pauseMillis,
            long cycles,
            double waitedMillis,
            double availableRate) {}

    /**
     * The collectors whose time is stop-the-world pauses: G1's young, mixed and full collections and its
     * concurrent cycle's pauses, ZGC's and Shenandoah's "Pauses" beans; not the concurrent "Cycles" beans.
     */
    private static final List<java.lang.management.GarbageCollectorMXBean> PAUSING =
            ManagementFactory.getGarbageCollectorMXBeans().stream()
                    .filter(gc -> !gc.getName().contains("Cycles"))
                    .toList();

    /** The concurrent collectors' cycles (ZGC's and Shenandoah's "Cycles" beans): mutators take barrier slow paths. */
    private static final List<java.lang.management.GarbageCollectorMXBean> CYCLING =
            ManagementFactory.getGarbageCollectorMXBeans().stream()
                    .filter(gc -> gc.getName().contains("Cycles"))
                    .toList();

    /** Collections (pauses or cycles) the given beans have counted so far. */
    private static long collections(List<java.lang.management.GarbageCollectorMXBean> beans) {
        return beans.stream()
                .mapToLong(gc -> Math.max(0, gc.getCollectionCount()))
                .sum();
    }

    private static long pauseMillis() {
        return PAUSING.stream()
                .mapToLong(gc -> Math.max(0, gc.getCollectionTime()))
                .sum();
    }

    public static void main(String[] args) throws Exception {
        int blocks = args.length > 0 ? Integer.parseInt(args[0]) : 131_072;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 9;
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        boolean pinned = args.length > 3 && args[3].equals("pinned");
        int cpus = Runtime.getRuntime().availableProcessors();
        if (pinned && cpus <= threads) {
            throw new IllegalArgumentException(
                    "pinned needs more CPUs than storing threads: " + cpus + " CPUs, " + threads + " threads");
        }
        // the service's defaults (5 ms batches of at most 512 events), with a queue that holds a whole round
        EventsProperties config = new EventsProperties(
                true,
                "tcp://127.0.0.1:*",
                "tcp://127.0.0.1:*",
                "kv@{host}@{model}",
                1000,
                Math.max(100_000, 2 * blocks),
                Duration.ofMillis(5),
                512,
                100_000,
                EventEncoding.ARRAY,
                0,
                new EventsProperties.Medium("GPU", "CPU", "DISK"));
        // one engine for both kinds of round, its events switched between rounds: two engines would put each
        // kind on memory and a catalog of its own, and on this VM the first round on memory the other kind
        // used last ran 10-20 % slower, whichever kind it was
        Switched events = new Switched();
        try (Arena arena = Arena.ofShared();
                KvEventPublisher publisher =
                        new KvEventPublisher(config, "bench", ns -> null, new SimpleMeterRegistry());
                TierEngine engine = engine(blocks, events)) {
            // the router's side runs in a process of its own (Python, pyzmq), so the JVM's threads are the
            // service's
            Process subscriber = new ProcessBuilder("/usr/bin/python3", "-c", SUBSCRIBER, publisher.endpoint())
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            BufferedReader fromSubscriber =
                    new BufferedReader(new InputStreamReader(subscriber.getInputStream(), StandardCharsets.UTF_8));
            Writer toSubscriber = new OutputStreamWriter(subscriber.getOutputStream(), StandardCharsets.UTF_8);
            if (!"READY".equals(fromSubscriber.readLine())) {
                throw new IllegalStateException("the Python subscriber (python3-zmq) did not start");
            }
            if (pinned) {
                BitSet rest = new BitSet();
                rest.set(threads, cpus);
                restrictAll("/proc/self/task", rest);
                restrictAll("/proc/" + subscriber.pid() + "/task", rest);
            }
            // the publisher's own thread and its JeroMQ context's I/O threads (no other context in this JVM)
            long[] eventThreads = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().equals("kv-events")
                            || t.getName().startsWith("iothread-")
                            || t.getName().startsWith("reaper-"))
                    .mapToLong(Thread::threadId)
                    .toArray();
            Thread.sleep(1000);
            MemorySegment src = arena.allocate(BLOCK);
            src.fill((byte) 7);
            Meter meter = new Meter(engine, events, publisher, eventThreads, pinned);
            System.out.printf(
                    "# JVM: %s; max heap %d MiB; options %s%n",
                    PAUSING.stream()
                            .map(java.lang.management.GarbageCollectorMXBean::getName)
                            .toList(),
                    Runtime.getRuntime().maxMemory() >> 20,
                    ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                            .filter(a -> a.startsWith("-X"))
                            .toList());
            List<Round> offRounds = new ArrayList<>();
            List<Round> onRounds = new ArrayList<>();
            List<Double> ratios = new ArrayList<>();
            List<Double> availableRatios = new ArrayList<>();
            for (int r = 0; r < rounds + 1; r++) { // round 0 warms up both
                boolean offFirst = r % 2 == 0; // off, on, on, off, ...: neither always runs first
                Round a = offFirst ? meter.round(blocks, threads, src, false) : null;
                Round b = meter.round(blocks, threads, src, true);
                if (a == null) {
                    a = meter.round(blocks, threads, src, false);
                }
                System.out.printf(
                        "#   %6.1f s round %2d%s: off %,8.0f stores/s (%,8.0f on an available CPU) %5.0f ns/store, waited"
                                + " %4.0f ms, GC pauses %d (%4d ms) | on %,8.0f (%,8.0f) %5.0f ns, waited %4.0f ms, GC"
                                + " pauses %d (%4d ms)%n",
                        ManagementFactory.getRuntimeMXBean().getUptime() / 1e3,
                        r,
                        r == 0 ? " (warm-up)" : "",
                        a.rate(),
                        a.availableRate(),
                        a.storeCpu(),
                        a.waitedMillis(),
                        a.pauses(),
                        a.pauseMillis(),
                        b.rate(),
                        b.availableRate(),
                        b.storeCpu(),
                        b.waitedMillis(),
                        b.pauses(),
                        b.pauseMillis());
                if (r > 0) {
                    offRounds.add(a);
                    onRounds.add(b);
                    ratios.add(b.rate() / a.rate());
                    availableRatios.add(b.availableRate() / a.availableRate());
                }
            }
            System.out.printf(
                    "# %d x 4 KiB stores per round, %d thread(s), %d rounds; %d CPUs%s%n",
                    blocks,
                    threads,
                    rounds,
                    cpus,
                    pinned
                            ? "; pinned: storing threads on CPUs 0-" + (threads - 1) + ", every other thread and the"
                                    + " subscriber on CPUs " + threads + "-" + (cpus - 1)
                            : "");
            System.out.println("# CPU time of the JVM's busiest threads over the whole run:");
            Thread.getAllStackTraces().keySet().stream()
                    .sorted(java.util.Comparator.comparingLong((Thread t) -> -THREADS.getThreadCpuTime(t.threadId())))
                    .limit(8)
                    .forEach(t -> System.out.printf(
                            "#   %-28s %6.0f ms%n", t.getName(), THREADS.getThreadCpuTime(t.threadId()) / 1e6));
            toSubscriber.write("COUNT\n");
            toSubscriber.flush();
            String batches = fromSubscriber.readLine();
            subscriber.destroy();
            System.out.printf(
                    "events off: median %.0f stores/s; CPU per store on the storing threads %.0f ns%n",
                    median(offRounds, Round::rate), median(offRounds, Round::storeCpu));
            System.out.printf(
                    "events on:  median %.0f stores/s; CPU per store on the storing threads %.0f ns, on the publisher"
                            + " thread and its ZMQ I/O thread %.0f ns%n",
                    median(onRounds, Round::rate),
                    median(onRounds, Round::storeCpu),
                    median(onRounds, Round::publisherCpu));
            System.out.printf(
                    "concurrent GC cycles ending inside the rounds: off %d, on %d%n",
                    offRounds.stream().mapToLong(Round::cycles).sum(),
                    onRounds.stream().mapToLong(Round::cycles).sum());
            System.out.printf(
                    "GC pauses inside the rounds: off %d (%d ms), on %d (%d ms); storing threads waiting for a CPU: off"
                            + " %.0f ms, on %.0f ms%n",
                    offRounds.stream().mapToLong(Round::pauses).sum(),
                    offRounds.stream().mapToLong(Round::pauseMillis).sum(),
                    onRounds.stream().mapToLong(Round::pauses).sum(),
                    onRounds.stream().mapToLong(Round::pauseMillis).sum(),
                    offRounds.stream().mapToDouble(Round::waitedMillis).sum(),
                    onRounds.stream().mapToDouble(Round::waitedMillis).sum());
            System.out.printf(
                    "on/off stores/s on an available CPU (wall time less the storing threads' run-queue wait):"
                            + " median of the rounds' ratios %.3f (each round pair: %s); ratio of medians %.3f%n",
                    median(availableRatios, x -> x),
                    availableRatios.stream().map(x -> String.format("%.2f", x)).toList(),
                    median(onRounds, Round::availableRate) / median(offRounds, Round::availableRate));
            System.out.printf(
                    "on/off stores/s: median of the rounds' ratios %.3f (each round pair: %s); ratio of medians %.3f%n",
                    median(ratios, x -> x),
                    ratios.stream().map(x -> String.format("%.2f", x)).toList(),
                    median(onRounds, Round::rate) / median(offRounds, Round::rate));
            double offCpu = median(offRounds, Round::storeCpu);
            double onCpu = median(onRounds, Round::storeCpu);
            double publishing = median(onRounds, Round::publisherCpu);
            System.out.printf(
                    "events' CPU cost per store: %+.0f ns on the storing threads (%+.1f %%), %+.0f ns publishing"
                            + " (%+.1f %% of a store's CPU); last seq %d, batches the subscriber received %s%n",
                    onCpu - offCpu,
                    100 * (onCpu - offCpu) / offCpu,
                    publishing,
                    100 * publishing / offCpu,
                    publisher.lastSeq(),
                    batches);
        }
    }

    /** Counts the messages it receives; answers a line on stdin with the count of whole messages. */
    private static final String SUBSCRIBER = """
            import sys, zmq
            ctx = zmq.Context()
            s = ctx.socket(zmq.SUB)
            s.setsockopt(zmq.SUBSCRIBE, b"")
            s.connect(sys.argv[1])
            poller = zmq.Poller()
            poller.register(s, zmq.POLLIN)
            poller.register(sys.stdin, zmq.POLLIN)
            print("READY", flush=True)
            n = 0
            while True:
                ready = dict(poller.poll())
                if s in ready:
                    while True:
                        try:
                            s.recv_multipart(zmq.NOBLOCK)
                            n += 1
                        except zmq.Again:
                            break
                if sys.stdin.fileno() in ready:
                    sys.stdin.readline()
                    print(n, flush=True)
            """;

    private static TierEngine engine(int blocks, EngineEvents events) {
        Map<TierId, TierSettings> settings = new EnumMap<>(TierId.class);
        settings.put(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.99, 0.98, false));
        long capacity = (long) blocks * BLOCK * 11 / 10;
        capacity = (capacity + (1 << 20) - 1) / (1 << 20) * (1 << 20);
        return new TierEngine(
                List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), capacity, 1 << 20)),
                settings,
                Duration.ofSeconds(30),
                events,
                Clock.systemUTC());
    }

    /** The hash of the round's {@code i}-th block (a block's parent is the hash of the one before). */
    private static BlockHash blockHash(long i) {
        return BlockHash.ofLong(i * 0x9E3779B97F4A7C15L + 1);
    }

    /**
     * The engine's events, handed on to the publisher or to nothing as the round wants; switched between rounds
     * only, so both kinds pay the same read of the field.
     */
    private static final class Switched implements EngineEvents {
        volatile EngineEvents target = EngineEvents.NONE;

        @Override
        public void copyAdded(TierId tier, BlockRecord block) {
            target.copyAdded(tier, block);
        }

        @Override
        public void copyRemoved(TierId tier, BlockKey key, int length) {
            target.copyRemoved(tier, key, length);
        }
    }

    /** Restricts every thread listed under {@code taskDir} (a process's {@code /proc/<pid>/task}) to {@code cpus}. */
    private static void restrictAll(String taskDir, BitSet cpus) throws Exception {
        try (var tasks = Files.list(Path.of(taskDir))) {
            for (Path task : tasks.toList()) {
                try {
                    CpuAffinity.restrict(Integer.parseInt(task.getFileName().toString()), cpus);
                } catch (PosixException e) {
                    // a thread that ended meanwhile
                }
            }
        }
    }

    /** Runs rounds and reads the CPU clocks of the threads involved. */
    private record Meter(
            TierEngine engine, Switched events, KvEventPublisher publisher, long[] eventThreads, boolean pinned) {

        /** Stores {@code blocks} new blocks and measures them; then deletes them (not timed). */
        Round round(int blocks, int threads, MemorySegment src, boolean evented) throws Exception {
            events.target = evented ? publisher : EngineEvents.NONE; // the workers started below see it
            AtomicLong next = new AtomicLong();
            AtomicLongArray cpu = new AtomicLongArray(threads);
            AtomicLongArray waited = new AtomicLongArray(threads);
            // each storing thread's first and last moment: the round's time is from the first thread's start to
            // the last one's end, without the thread starts and joins of this coordinating thread, which shares a
            // CPU with the publisher and the subscriber when pinned and woke up to ~4 ms late in events-on rounds
            AtomicLongArray began = new AtomicLongArray(threads);
            AtomicLongArray ended = new AtomicLongArray(threads);
            String ns = "bench";
            long handled = publisher.handled();
            long pub0 = cpu(eventThreads);
            Thread[] workers = new Thread[threads];
            long pauses0 = collections(PAUSING);
            long pauseMillis0 = pauseMillis();
            long cycles0 = collections(CYCLING);
            for (int t = 0; t < threads; t++) {
                int slot = t;
                workers[t] = Thread.ofPlatform()
                        .name(evented ? "store-on-" + t : "store-off-" + t)
                        .start(() -> {
                            if (pinned) {
                                BitSet own = new BitSet();
                                own.set(slot);
                                try {
                                    CpuAffinity.restrict(0, own);
                                } catch (PosixException e) {
                                    throw new IllegalStateException(e);
                                }
                            }
                            long waited0 = runQueueWait();
                            began.set(slot, System.nanoTime());
                            long cpu0 = THREADS.getCurrentThreadCpuTime();
                            try {
                                for (long i = next.getAndIncrement(); i < blocks; i = next.getAndIncrement()) {
                                    // prompts of 64 blocks, each block but the first chained to the one before, as an
                                    // engine stores them (a stored event carries its parent)
                                    engine.put(
                                            new BlockKey(ns, blockHash(i)), i % 64 == 0 ? null : blockHash(i - 1), src);
                                }
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                            ended.set(slot, System.nanoTime());
                            cpu.set(slot, THREADS.getCurrentThreadCpuTime() - cpu0);
                            waited.set(slot, runQueueWait() - waited0);
                        });
            }
            for (Thread w : workers) {
                w.join();
            }
            long first = Long.MAX_VALUE;
            long last = Long.MIN_VALUE;
            for (int t = 0; t < threads; t++) {
                first = Math.min(first, began.get(t));
                last = Math.max(last, ended.get(t));
            }
            long wall = last - first;
            double rate = blocks / (wall / 1e9);
            long pauses = collections(PAUSING) - pauses0;
            long pausedMillis = pauseMillis() - pauseMillis0;
            long cycles = collections(CYCLING) - cycles0;
            if (evented) {
                awaitPublished(handled + blocks); // the round's events, sent, count for the round
            }
            double pub = (double) (cpu(eventThreads) - pub0) / blocks;
            long storing = 0;
            long waitedNanos = 0;
            for (int t = 0; t < threads; t++) {
                storing += cpu.get(t);
                waitedNanos += waited.get(t);
            }
            double waitedPerThread = (double) waitedNanos / threads;
            engine.deleteNamespace(ns);
            if (evented) {
                awaitPublished(handled + 2L * blocks); // the removals go out before the next round starts
            }
            return new Round(
                    rate,
                    (double) storing / blocks,
                    evented ? pub : 0,
                    pauses,
                    pausedMillis,
                    cycles,
                    waitedPerThread / 1e6,
                    blocks / ((wall - waitedPerThread) / 1e9));
        }

        /** Nanoseconds the calling thread has spent runnable on a run queue, waiting for a CPU; 0 if unknown. */
        private static long runQueueWait() {
            try {
                String[] fields = Files.readString(Path.of("/proc/thread-self/schedstat"))
                        .trim()
                        .split(" ");
                return Long.parseLong(fields[1]);
            } catch (java.io.IOException | RuntimeException e) {
                return 0;
            }
        }

        private static long cpu(long[] threads) {
            long sum = 0;
            for (long id : threads) {
                sum += Math.max(0, THREADS.getThreadCpuTime(id));
            }
            return sum;
        }

        /** Waits until {@code changes} have been published, then a little for JeroMQ's I/O thread to send them. */
        private void awaitPublished(long changes) throws InterruptedException {
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (publisher.handled() < changes) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                            "events not published within 60 s: " + publisher.handled() + " of " + changes + " changes");
                }
                Thread.sleep(1);
            }
            Thread.sleep(20);
        }
    }

    private static <T> double median(List<T> v, java.util.function.ToDoubleFunction<T> f) {
        double[] a = v.stream().mapToDouble(f).sorted().toArray();
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }
}
