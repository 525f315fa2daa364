package io.kvstore.bench.transport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * One tenant flooding kvstore with lookups while another asks small ones (bench/fairness.sh, docs/benchmarks.md
 * "Tenant fairness"): run as two
 * processes, so the two clients share no connection or scheduler; each client thread keeps one raw HTTP/1.1
 * connection ({@link RawHttp}), so the clients take little CPU beside the service.
 * <ul>
 *   <li>{@code flood URL TOKEN NS CLIENTS TOKENS SECONDS}: {@code CLIENTS} virtual threads, one connection
 *       each, POST /v1/lookup of a {@code TOKENS}-token prompt back to back; prints lookups/s and how many
 *       were answered other than 200;</li>
 *   <li>{@code victim URL TOKEN NS SECONDS LABEL}: one client, a 64-token lookup every 5 ms after a 3 s
 *       warm-up; prints p50, p90, p99 and the worst latency.</li>
 * </ul>
 */
public final class TenantFairnessLoad {

    private TenantFairnessLoad() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "flood" ->
                flood(
                        args[1],
                        args[2],
                        args[3],
                        Integer.parseInt(args[4]),
                        Integer.parseInt(args[5]),
                        Integer.parseInt(args[6]));
            case "victim" -> victim(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5]);
            default -> throw new IllegalArgumentException("flood | victim, not " + args[0]);
        }
    }

    /** A lookup of a {@code tokens}-token prompt in {@code ns}, as the JSON body's bytes. */
    private static List<byte[]> lookup(String ns, int tokens) {
        String ids = IntStream.range(0, tokens)
                .mapToObj(i -> Integer.toString(i * 7 % 32_000))
                .collect(Collectors.joining(","));
        return List.of(("{\"namespace\":\"" + ns + "\",\"tokenIds\":[" + ids + "]}").getBytes(StandardCharsets.UTF_8));
    }

    /** Sends one lookup on this thread's kept-alive connection and reads the answer; its status. */
    private static int ask(String url, String auth, List<byte[]> body) throws IOException {
        RawHttp http = RawHttp.local(url);
        var response = http.send("POST", "/v1/lookup", "application/json", auth, body);
        http.text(response);
        return response.status();
    }

    private static void flood(String url, String token, String ns, int clients, int tokens, int seconds)
            throws Exception {
        List<byte[]> body = lookup(ns, tokens);
        String auth = "Authorization: Bearer " + token + "\r\n";
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong ok = new AtomicLong();
        AtomicLong other = new AtomicLong();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < clients; c++) {
                threads.submit(() -> {
                    while (!stop.get()) {
                        try {
                            (ask(url, auth, body) == 200 ? ok : other).incrementAndGet();
                        } catch (IOException e) {
                            other.incrementAndGet();
                            RawHttp.local(url).close();
                        }
                    }
                    return null;
                });
            }
            Thread.sleep(seconds * 1000L);
            stop.set(true);
        }
        RawHttp.closeAll();
        System.out.printf(
                "flood: %d clients x %d-token lookups: %.0f lookups/s, %d answered other than 200%n",
                clients, tokens, ok.get() / (double) seconds, other.get());
    }

    private static void victim(String url, String token, String ns, int seconds, String label) throws Exception {
        List<byte[]> body = lookup(ns, 64);
        String auth = "Authorization: Bearer " + token + "\r\n";
        long warm = System.nanoTime() + 3_000_000_000L;
        while (System.nanoTime() < warm) {
            ask(url, auth, body);
        }
        List<Long> nanos = new ArrayList<>();
        int failed = 0;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < end) {
            long t0 = System.nanoTime();
            int status = ask(url, auth, body);
            nanos.add(System.nanoTime() - t0);
            failed += status == 200 ? 0 : 1;
            Thread.sleep(5);
        }
        RawHttp.closeAll();
        Collections.sort(nanos);
        System.out.printf(
                "%s: %d lookups (%d not 200), p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, worst %.2f ms%n",
                label, nanos.size(), failed, ms(nanos, 0.50), ms(nanos, 0.90), ms(nanos, 0.99), nanos.getLast() / 1e6);
    }

    private static double ms(List<Long> sorted, double q) {
        return sorted.get((int) Math.min(sorted.size() - 1, Math.floor(sorted.size() * q))) / 1e6;
    }
}
