package io.kvstore.bench.transport;

import io.kvstore.block.BlockHash;
import io.kvstore.hashing.BlockHasher;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.hashing.HashScheme;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * kvstore over HTTP beside Redis over RESP, same machine, same blocks, same concurrency:
 * <ul>
 *   <li>{@code lookup}: 64 clients (virtual threads) POST /v1/lookup for a 2,048-block prefix, by block
 *       hashes and by token ids; lookups/s, p50, p99;</li>
 *   <li>{@code blocks}: 2 MiB blocks stored in batches (one framed PUT of {@code batch} blocks; for Redis a
 *       pipeline of {@code batch} SETs), then fetched back the same way (framed fetch; pipelined GETs), by
 *       1, 4 and 16 clients; every byte fetched is compared; GB/s of block bytes.</li>
 * </ul>
 * Arguments: {@code lookup <base-url> <seconds> [warm-up-seconds, default 2] [peer-url...]} (after each
 * measured run, where the time went by the nodes' own meters: {@link Breakdown}) or {@code blocks <base-url> <redis-port> <blocks> <batch> <clients...>}.
 */
public final class HttpLoad {

    private static final int BLOCK = 2 << 20;
    private static final HttpClient HTTP =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "lookup" ->
                lookups(
                        args[1],
                        Integer.parseInt(args[2]),
                        args.length > 3 ? Integer.parseInt(args[3]) : 2,
                        Arrays.asList(args).subList(Math.min(4, args.length), args.length));
            case "blocks" -> {
                int[] clients = Arrays.stream(args, 5, args.length)
                        .mapToInt(Integer::parseInt)
                        .toArray();
                blocks(
                        args[1],
                        Integer.parseInt(args[2]),
                        Integer.parseInt(args[3]),
                        Integer.parseInt(args[4]),
                        clients);
            }
            default -> throw new IllegalArgumentException("mode lookup or blocks, got " + args[0]);
        }
    }

    // ---- lookups --------------------------------------------------------------------------------

    private static void lookups(String base, int seconds, int warmUpSeconds, List<String> peers) throws Exception {
        String ns = "lookup-bench";
        // 1 layer x 1 KV head x 16 dims x fp16 x 2 x 16 tokens = 1 KiB blocks: the prefix is about the catalog, not
        // bytes
        send("PUT", base + "/v1/namespaces/" + ns, """
                {"model":"bench","layout":{"layers":1,"kvHeads":1,"headDim":16,"dtype":"float16","blockSize":16},
                 "hashScheme":"sha256_cbor","hashSeed":"0"}""".getBytes());
        int blocks = 2048;
        int[] tokens = new SplittableRandom(7).ints(blocks * 16L, 0, 150_000).toArray();
        List<BlockHash> hashes = BlockHasher.create(HashScheme.SHA256_CBOR, "0").hashPrompt(tokens, 16, ExtraKeys.NONE);
        ByteArrayOutputStream frames = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(frames);
        byte[] block = new byte[1024];
        for (int i = 0; i < blocks; i++) {
            frame(out, hashes.get(i), i == 0 ? null : hashes.get(i - 1), block);
        }
        send("PUT", base + "/v1/namespaces/" + ns + "/blocks", frames.toByteArray(), "application/octet-stream");
        StringBuilder byHash = new StringBuilder("{\"namespace\":\"" + ns + "\",\"blockHashes\":[");
        for (int i = 0; i < blocks; i++) {
            byHash.append(i == 0 ? "\"" : ",\"").append(hashes.get(i).hex()).append('"');
        }
        byHash.append("]}");
        StringBuilder byTokens = new StringBuilder("{\"namespace\":\"" + ns + "\",\"tokenIds\":[");
        for (int i = 0; i < tokens.length; i++) {
            byTokens.append(i == 0 ? "" : ",").append(tokens[i]);
        }
        byTokens.append("]}");
        for (String[] kind : new String[][] {{"blockHashes", byHash.toString()}, {"tokenIds", byTokens.toString()}}) {
            byte[] body = kind[1].getBytes();
            String check = send("POST", base + "/v1/lookup", body);
            if (!check.contains("\"matchedBlocks\":" + blocks)) {
                throw new IllegalStateException("the 2,048-block prefix is not all found: " + check.substring(0, 200));
            }
            // warm-up: every JVM on the path compiles the lookup's code first (a node of a cluster, and the
            // nodes it probes, take thousands of lookups to get there); not in the figures
            runLookups(base, kind[0], body, 64, warmUpSeconds, false);
            for (int clients : new int[] {1, 64}) { // latency unloaded, then 64 engines at once
                Breakdown before = Breakdown.read(base, peers);
                runLookups(base, kind[0], body, clients, seconds, true);
                System.out.println(Breakdown.read(base, peers).since(before));
            }
        }
    }

    /**
     * {@code clients} clients sending the same lookup back to back for {@code seconds}; prints lookups/s, p50
     * and p99 of the lookups answered 200 when {@code report} (a warm-up prints only its failures). An answer other
     * than 200 (a 408 when the server waited {@code server.tomcat.connection-timeout} for a body on an
     * overloaded machine, a 5xx) or a dropped connection is counted by kind and reported beside the figures
     * instead of ending the run; its connection is replaced.
     */
    private static void runLookups(String base, String kind, byte[] body, int clients, int seconds, boolean report)
            throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        List<long[]> latencies = new ArrayList<>();
        List<Future<Integer>> counts = new ArrayList<>();
        java.util.Map<String, java.util.concurrent.atomic.LongAdder> failures =
                new java.util.concurrent.ConcurrentSkipListMap<>();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < clients; c++) {
                long[] mine = new long[1 << 16];
                latencies.add(mine);
                counts.add(pool.submit(() -> {
                    int n = 0;
                    while (System.nanoTime() < end && n < mine.length) {
                        long t = System.nanoTime();
                        RawHttp http = RawHttp.local(base);
                        String failure;
                        try {
                            RawHttp.Response r = http.send("POST", "/v1/lookup", "application/json", List.of(body));
                            String answer = http.text(r);
                            if (r.status() == 200 && answer.length() >= 100) {
                                mine[n++] = System.nanoTime() - t;
                                continue;
                            }
                            if (r.status() == 200) {
                                throw new IllegalStateException("lookup answered 200 without a prefix: " + answer);
                            }
                            failure = "HTTP " + r.status();
                        } catch (IOException e) {
                            failure = e.getClass().getSimpleName();
                        }
                        http.close(); // the server may have closed it; the next request opens a new one
                        failures.computeIfAbsent(failure, f -> new java.util.concurrent.atomic.LongAdder())
                                .increment();
                    }
                    return n;
                }));
            }
        }
        int total = 0;
        for (Future<Integer> f : counts) {
            total += f.get();
        }
        long[] all = new long[total];
        int k = 0;
        for (int c = 0; c < clients; c++) {
            int n = counts.get(c).get();
            System.arraycopy(latencies.get(c), 0, all, k, n);
            k += n;
        }
        RawHttp.closeAll();
        Arrays.sort(all);
        String failed = failures.isEmpty()
                ? ""
                : "; not answered 200 (left out of the figures): "
                        + failures.entrySet().stream()
                                .map(e -> e.getValue().sum() + " x " + e.getKey())
                                .collect(java.util.stream.Collectors.joining(", "));
        if (report && total > 0) {
            System.out.printf(
                    "lookup by %s, 2,048 blocks, %d clients: %.0f lookups/s, p50 %.2f ms, p99 %.2f ms (%d lookups%s)%n",
                    kind,
                    clients,
                    total / (double) seconds,
                    all[total / 2] / 1e6,
                    all[(int) (total * 0.99)] / 1e6,
                    total,
                    failed);
        } else if (!failed.isEmpty() || total == 0) {
            System.out.printf(
                    "lookup by %s, %d clients, %d s%s: %d lookups answered 200%s%n",
                    kind, clients, seconds, report ? "" : " (warm-up)", total, failed);
        }
    }

    /**
     * Where a run's lookups spent their time, as the servers measured it (means per lookup, from the
     * Prometheus meters before and after the run): the node asked, in its HTTP handler ({@code
     * http_server_requests_seconds}, {@code /v1/lookup}) and in the lookup itself ({@code kvstore_lookup_seconds}:
     * on a node of a cluster, placement, the probes and its own share); per peer, the probe's round trip seen
     * from the node asked ({@code kvstore_cluster_probe_seconds}) and the peer's own time answering it ({@code
     * blocks:probe}). What the client measured beyond the handler is the connection: the request and answer
     * bodies on loopback and the wait to be scheduled.
     */
    record Breakdown(java.util.Map<String, double[]> meters) {

        static Breakdown read(String base, List<String> peers) throws Exception {
            java.util.Map<String, double[]> m = new java.util.TreeMap<>();
            scrape(base, "asked", m);
            for (int i = 0; i < peers.size(); i++) {
                scrape(peers.get(i), "peer" + (i + 1), m);
            }
            return new Breakdown(m);
        }

        /** Adds the sum and count of each timer of interest at {@code url} under {@code who}'s keys. */
        private static void scrape(String url, String who, java.util.Map<String, double[]> m) throws Exception {
            for (String line : send("GET", url + "/actuator/prometheus", null).split("\n")) {
                String key = null;
                if (line.startsWith("http_server_requests_seconds_") && line.contains("uri=\"/v1/lookup\"")) {
                    key = who + " handler";
                } else if (line.startsWith("http_server_requests_seconds_") && line.contains("blocks:probe")) {
                    key = who + " answering probes";
                } else if (line.startsWith("kvstore_lookup_seconds_")) {
                    key = who + " lookup";
                } else if (line.startsWith("kvstore_cluster_probe_seconds_")) {
                    int at = line.indexOf("node=\"") + 6;
                    key = who + " probe round trip to " + line.substring(at, line.indexOf('"', at));
                }
                boolean sum = line.contains("_seconds_sum");
                if (key != null && (sum || line.contains("_seconds_count"))) {
                    double v = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                    m.computeIfAbsent(key, k -> new double[2])[sum ? 0 : 1] += v;
                }
            }
        }

        /** The mean of each timer over the lookups between {@code before} and this, as one line. */
        String since(Breakdown before) {
            StringBuilder out = new StringBuilder("  server-side means per call:");
            meters.forEach((key, now) -> {
                double[] then = before.meters().getOrDefault(key, new double[2]);
                double calls = now[1] - then[1];
                if (calls > 0) {
                    out.append(String.format(" %s %.2f ms;", key, (now[0] - then[0]) / calls * 1e3));
                }
            });
            return out.toString();
        }
    }

    // ---- 2 MiB blocks ---------------------------------------------------------------------------

    /** {@code count} random 2 MiB blocks and a random 32-byte hash for each, drawn in that order. */
    record RandomBlocks(List<byte[]> data, List<BlockHash> hashes) {}

    static RandomBlocks randomBlocks(SplittableRandom random, int count) {
        List<byte[]> data = new ArrayList<>(count);
        List<BlockHash> hashes = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            byte[] b = new byte[BLOCK];
            for (int j = 0; j < BLOCK; j += 8) {
                long v = random.nextLong();
                for (int s = 0; s < 8; s++) {
                    b[j + s] = (byte) (v >>> (8 * s));
                }
            }
            data.add(b);
            byte[] h = new byte[32];
            random.nextBytes(h);
            hashes.add(BlockHash.of(h));
        }
        return new RandomBlocks(data, hashes);
    }

    private static void blocks(String base, int redisPort, int count, int batch, int[] clientCounts) throws Exception {
        RandomBlocks generated = randomBlocks(new SplittableRandom(11), count);
        List<byte[]> data = generated.data();
        List<BlockHash> hashes = generated.hashes();
        // warm-up: one untimed round of every operation, so the JIT has compiled the service's and this client's
        // paths before the clock runs (the service is long-lived; Redis has no JIT)
        blockRound(base, redisPort, hashes, data, count / batch, batch, clientCounts[0]);
        for (int clients : clientCounts) {
            long[] t = blockRound(base, redisPort, hashes, data, count / batch, batch, clients);
            long store = t[0], fetch = t[1], redisSet = t[2], redisGet = t[3];
            int batches = count / batch;
            double bytes = (double) batches * batch * BLOCK;
            System.out.printf(
                    "2 MiB blocks, %d per request, %d clients: kvstore HTTP store %.2f GB/s fetch %.2f GB/s; "
                            + "Redis SET %.2f GB/s GET %.2f GB/s; ratio store %.2f fetch %.2f (%d blocks, all bytes compared)%n",
                    batch,
                    clients,
                    bytes / store,
                    bytes / fetch,
                    bytes / redisSet,
                    bytes / redisGet,
                    (double) redisSet / store,
                    (double) redisGet / fetch,
                    batches * batch);
        }
    }

    /** Stores and fetches every block through kvstore, then SETs and GETs them in Redis: the four times in ns. */
    private static long[] blockRound(
            String base, int redisPort, List<BlockHash> hashes, List<byte[]> data, int batches, int batch, int clients)
            throws Exception {
        String ns = "http-load-" + clients + "-" + Long.toString(System.nanoTime(), 36);
        send("DELETE", base + "/v1/namespaces/" + ns, null);
        // 2 layers x 8 KV heads x 128 dims x fp16 x 2 (K,V) x 256 tokens = 2 MiB
        send("PUT", base + "/v1/namespaces/" + ns, """
                {"model":"bench","layout":{"layers":2,"kvHeads":8,"headDim":128,"dtype":"float16","blockSize":256},
                 "hashScheme":"sha256_cbor","hashSeed":"0"}""".getBytes());
        long t0 = System.nanoTime();
        Clients.run(clients, batches, b -> httpStore(base, ns, hashes, data, b * batch, batch));
        long store = System.nanoTime() - t0;
        t0 = System.nanoTime();
        Clients.run(clients, batches, b -> httpFetch(base, ns, hashes, data, b * batch, batch));
        long fetch = System.nanoTime() - t0;
        RawHttp.closeAll();
        send("DELETE", base + "/v1/namespaces/" + ns, null);

        try (Redis flush = new Redis(redisPort)) {
            flush.command("FLUSHALL");
        }
        t0 = System.nanoTime();
        Clients.run(clients, batches, b -> Redis.local(redisPort).set(hashes, data, b * batch, batch));
        long redisSet = System.nanoTime() - t0;
        t0 = System.nanoTime();
        Clients.run(clients, batches, b -> Redis.local(redisPort).getAndCompare(hashes, data, b * batch, batch));
        long redisGet = System.nanoTime() - t0;
        Redis.closeAll();
        return new long[] {store, fetch, redisSet, redisGet};
    }

    static void frame(DataOutputStream out, BlockHash hash, BlockHash parent, byte[] block) throws IOException {
        out.writeByte(hash.length());
        out.write(hash.toBytes());
        if (parent == null) {
            out.writeByte(0);
        } else {
            out.writeByte(parent.length());
            out.write(parent.toBytes());
        }
        out.writeInt(block.length);
        out.write(block);
    }

    private static void httpStore(
            String base, String ns, List<BlockHash> hashes, List<byte[]> data, int first, int count) throws Exception {
        // headers and block arrays go out as they are: no batch-sized copy on the client either
        List<byte[]> parts = new ArrayList<>();
        for (int i = first; i < first + count; i++) {
            ByteArrayOutputStream header = new ByteArrayOutputStream(48);
            DataOutputStream out = new DataOutputStream(header);
            out.writeByte(32);
            out.write(hashes.get(i).toBytes());
            out.writeByte(0);
            out.writeInt(BLOCK);
            parts.add(header.toByteArray());
            parts.add(data.get(i));
        }
        RawHttp http = RawHttp.local(base);
        RawHttp.Response r = http.send("PUT", "/v1/namespaces/" + ns + "/blocks", "application/octet-stream", parts);
        String answer = http.text(r);
        if (r.status() != 200) {
            throw new IllegalStateException("store answered " + r.status() + ": " + answer);
        }
    }

    private static void httpFetch(
            String base, String ns, List<BlockHash> hashes, List<byte[]> data, int first, int count) throws Exception {
        StringBuilder body = new StringBuilder("{\"blockHashes\":[");
        for (int i = first; i < first + count; i++) {
            body.append(i == first ? "\"" : ",\"").append(hashes.get(i).hex()).append('"');
        }
        body.append("]}");
        RawHttp http = RawHttp.local(base);
        RawHttp.Response r = http.send(
                "POST",
                "/v1/namespaces/" + ns + "/blocks:fetch",
                "application/json",
                List.of(body.toString().getBytes()));
        if (r.status() != 200) {
            throw new IllegalStateException("fetch answered " + r.status() + ": " + http.text(r));
        }
        InputStream in = r.body();
        byte[] block = new byte[BLOCK];
        for (int i = first; i < first + count; i++) {
            int hashLength = in.read();
            in.readNBytes(hashLength);
            int parentLength = in.read();
            in.readNBytes(parentLength);
            byte[] len = in.readNBytes(4);
            int length = ((len[0] & 0xff) << 24) | ((len[1] & 0xff) << 16) | ((len[2] & 0xff) << 8) | (len[3] & 0xff);
            if (length != BLOCK || in.readNBytes(block, 0, BLOCK) != BLOCK || !Arrays.equals(block, data.get(i))) {
                throw new IllegalStateException("block " + i + " came back different");
            }
        }
        if (in.read() != -1) {
            throw new IllegalStateException("fetch answered more than " + count + " frames");
        }
    }

    static String send(String method, String url, byte[] body) throws Exception {
        return send(method, url, body, "application/json");
    }

    static String send(String method, String url, byte[] body, String contentType) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url))
                .method(
                        method,
                        body == null
                                ? HttpRequest.BodyPublishers.noBody()
                                : HttpRequest.BodyPublishers.ofByteArray(body));
        if (body != null) {
            b.header("Content-Type", contentType);
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() >= 300 && !(method.equals("DELETE") && r.statusCode() == 404)) {
            throw new IllegalStateException(method + " " + url + " answered " + r.statusCode() + ": " + r.body());
        }
        return r.body();
    }

    static final HexFormat HEX = HexFormat.of();
}
