package io.kvstore.bench.transport;

import io.kvstore.block.BlockHash;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;

/**
 * Not JMH: {@code bench/events_http.sh} runs it. 4 KiB blocks stored over the service's HTTP API (framed PUTs
 * of {@code batch} blocks with fresh hashes, by {@code clients} clients) into two services of the same build,
 * one with KV events off and one with them on (a subscriber receiving every batch), in alternating rounds of
 * {@code seconds} each, in one run: stores/s and the service process's CPU time per store (from {@code
 * /proc/<pid>/stat}), which a shared 2-CPU machine disturbs far less than the wall clock. This is the store a
 * user's engine makes, where {@code bench/events.sh} measures the engine's bare {@code put}.
 *
 * <p>Arguments: {@code <off-url> <off-pid> <on-url> <on-pid> [rounds] [seconds] [clients] [batch]}.
 */
public final class EventsHttpLoad {

    private static final int BLOCK = 4096;
    private static final HttpClient HTTP =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private static final AtomicLong NEXT_HASH = new AtomicLong(1);

    private record Service(String name, String url, long pid) {}

    private record Round(double rate, double cpuPerStore) {}

    public static void main(String[] args) throws Exception {
        Service off = new Service("off", args[0], Long.parseLong(args[1]));
        Service on = new Service("on", args[2], Long.parseLong(args[3]));
        int rounds = args.length > 4 ? Integer.parseInt(args[4]) : 9;
        int seconds = args.length > 5 ? Integer.parseInt(args[5]) : 3;
        int clients = args.length > 6 ? Integer.parseInt(args[6]) : 4;
        int batch = args.length > 7 ? Integer.parseInt(args[7]) : 16;
        List<Round> offRounds = new ArrayList<>();
        List<Round> onRounds = new ArrayList<>();
        List<Double> ratios = new ArrayList<>();
        for (int r = 0; r <= rounds; r++) { // round 0 warms both up, not counted
            boolean offFirst = r % 2 == 0;
            int length = r == 0 ? Math.max(seconds, 15) : seconds; // round 0: both services' JIT compiles the path
            Round a = round(offFirst ? off : on, length, clients, batch);
            Round b = round(offFirst ? on : off, length, clients, batch);
            Round offRound = offFirst ? a : b;
            Round onRound = offFirst ? b : a;
            if (r > 0) {
                offRounds.add(offRound);
                onRounds.add(onRound);
                ratios.add(onRound.rate() / offRound.rate());
            }
        }
        System.out.printf(
                "# 4 KiB blocks over HTTP, framed PUTs of %d blocks, %d clients, %d rounds of %d s per service; %d CPUs%n",
                batch, clients, rounds, seconds, Runtime.getRuntime().availableProcessors());
        System.out.printf(
                "events off: median %.0f stores/s, service CPU per store %.2f us%n",
                median(offRounds, Round::rate), median(offRounds, Round::cpuPerStore) / 1000);
        System.out.printf(
                "events on:  median %.0f stores/s, service CPU per store %.2f us%n",
                median(onRounds, Round::rate), median(onRounds, Round::cpuPerStore) / 1000);
        System.out.printf(
                "on/off stores/s: median of the rounds' ratios %.3f (each round pair: %s); ratio of medians %.3f;"
                        + " service CPU per store on/off %.3f%n",
                median(ratios, x -> x),
                ratios.stream().map(x -> String.format("%.2f", x)).toList(),
                median(onRounds, Round::rate) / median(offRounds, Round::rate),
                median(onRounds, Round::cpuPerStore) / median(offRounds, Round::cpuPerStore));
    }

    /** Stores fresh blocks for {@code seconds}; then deletes them (not timed) and lets the service settle. */
    private static Round round(Service service, int seconds, int clients, int batch) throws Exception {
        String ns = "events-http-" + Long.toString(System.nanoTime(), 36);
        // 1 layer x 1 KV head x 64 dims x fp16 x 2 (K,V) x 16 tokens = 4 KiB; 8-byte hashes (xxh3)
        HttpLoad.send("PUT", service.url() + "/v1/namespaces/" + ns, """
                {"model":"bench","layout":{"layers":1,"kvHeads":1,"headDim":64,"dtype":"float16","blockSize":16},
                 "hashScheme":"xxh3","hashSeed":"0"}""".getBytes());
        AtomicLong stored = new AtomicLong();
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        long cpu0 = cpuNanos(service.pid());
        long start = System.nanoTime();
        Thread[] workers = new Thread[clients];
        for (int c = 0; c < clients; c++) {
            workers[c] = Thread.ofPlatform().start(() -> {
                byte[] block = new byte[BLOCK];
                try {
                    while (System.nanoTime() < deadline) {
                        ByteArrayOutputStream frames = new ByteArrayOutputStream(batch * (BLOCK + 16));
                        DataOutputStream out = new DataOutputStream(frames);
                        for (int i = 0; i < batch; i++) {
                            HttpLoad.frame(
                                    out,
                                    BlockHash.ofLong(NEXT_HASH.getAndIncrement() * 0x9E3779B97F4A7C15L),
                                    null,
                                    block);
                        }
                        HttpResponse<String> r = HTTP.send(
                                HttpRequest.newBuilder(URI.create(service.url() + "/v1/namespaces/" + ns + "/blocks"))
                                        .header("Content-Type", "application/octet-stream")
                                        .PUT(HttpRequest.BodyPublishers.ofByteArray(frames.toByteArray()))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString());
                        if (r.statusCode() >= 300) {
                            throw new IllegalStateException("store answered " + r.statusCode() + ": " + r.body());
                        }
                        stored.addAndGet(batch);
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
        }
        for (Thread w : workers) {
            w.join();
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        long cpu = cpuNanos(service.pid()) - cpu0;
        HttpLoad.send("DELETE", service.url() + "/v1/namespaces/" + ns, null);
        Thread.sleep(500); // the removals' events go out before the next round
        return new Round(stored.get() / elapsed, (double) cpu / stored.get());
    }

    /** User + system CPU time of process {@code pid}, from {@code /proc/<pid>/stat} (clock ticks of 10 ms). */
    private static long cpuNanos(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime (fields 14, 15)
        return ticks * 10_000_000L;
    }

    private static <T> double median(List<T> v, ToDoubleFunction<T> f) {
        double[] a = v.stream().mapToDouble(f).sorted().toArray();
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }
}
