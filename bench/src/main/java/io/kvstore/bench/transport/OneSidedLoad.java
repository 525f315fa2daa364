package io.kvstore.bench.transport;

import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import io.kvstore.transfer.Peer;
import io.kvstore.transfer.RemoteRegion;
import io.kvstore.transfer.TransferEngine;
import io.kvstore.transfer.TransferOp;
import io.kvstore.transfer.TransferSpan;
import io.kvstore.transfer.nixl.NixlTransferEngine;
import io.kvstore.transfer.ucx.UcxPeer;
import io.kvstore.transfer.ucx.UcxSettings;
import io.kvstore.transfer.ucx.UcxTransferEngine;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;

/**
 * Store and fetch throughput of 2 MiB blocks over kvstore's one-sided path, as an engine would run it:
 * per batch, reserve slots over HTTP, WRITE the blocks with UCX (or a NIXL agent's UCX backend when
 * {@code /v1/transport} publishes NIXL agent metadata), commit (kvstore checksums them in
 * place); then per batch, lookup with a lease, READ the blocks from the lease's locations, release.
 * Every block has its own bytes (a working set far larger than the CPU caches); a sample is compared
 * after the READ. Prints one line per phase: GB/s of block bytes, end to end including the HTTP calls.
 *
 * <p>Arguments: base URL, total blocks, blocks per batch, concurrent clients, UCX transports ("" for
 * UCX's choice).
 */
public final class OneSidedLoad {

    private static final int BLOCK = 2 << 20;
    private static final HexFormat HEX = HexFormat.of();
    /** Time spent per step, summed over clients: reserve, WRITE, commit, lookup, READ, release. */
    private static final java.util.concurrent.atomic.LongAdder[] STEPS = new java.util.concurrent.atomic.LongAdder[6];

    private static final String[] STEP_NAMES = {"reserve", "write", "commit", "lookup", "read", "release"};

    static {
        for (int i = 0; i < STEPS.length; i++) {
            STEPS[i] = new java.util.concurrent.atomic.LongAdder();
        }
    }

    private static long step(int index, long since) {
        long now = System.nanoTime();
        STEPS[index].add(now - since);
        return now;
    }

    /** Engine-side buffer: UCX-allocated memory for direct UCX, host memory registered as DRAM_SEG for NIXL. */
    private static LocalRegion buffer(TransferEngine engine, Arena arena, long bytes) {
        return engine instanceof UcxTransferEngine u
                ? u.allocate(bytes)
                : engine.register(arena.allocate(bytes, 4096), MemoryKind.DRAM);
    }

    public static void main(String[] args) throws Exception {
        String base = args[0];
        int total = Integer.parseInt(args[1]);
        int batch = Integer.parseInt(args[2]);
        int clients = Integer.parseInt(args[3]);
        String tls = args.length > 4 ? args[4] : "";
        String ns = "onesided-load-" + clients + "-" + Long.toString(System.nanoTime(), 36);
        // 2 layers x 8 KV heads x 128 dims x fp16 x 2 (K,V) x 256 tokens = 2 MiB
        String warmup = ns + "-warmup";
        for (String n : List.of(ns, warmup)) {
            send("DELETE", base + "/v1/namespaces/" + n, null);
            send("PUT", base + "/v1/namespaces/" + n, """
                    {"model":"bench","layout":{"layers":2,"kvHeads":8,"headDim":128,"dtype":"float16","blockSize":256},
                     "hashScheme":"sha256_cbor","hashSeed":"0"}""");
        }
        String transport = send("GET", base + "/v1/transport", null);
        if (!transport.contains("\"available\":true")) {
            throw new IllegalStateException("kvstore has no one-sided transport: " + transport);
        }
        RemoteRegion remote = new RemoteRegion(
                Long.parseLong(field(transport, "address")),
                Long.parseLong(field(transport, "length")),
                Base64.getDecoder().decode(field(transport, "remoteKey")));
        boolean overNixl = transport.contains("\"agentMetadata\"");
        TransferEngine ucx;
        if (overNixl) {
            ucx = new NixlTransferEngine(
                    "onesided-load-" + ProcessHandle.current().pid(), Set.of("UCX"), java.time.Duration.ofSeconds(60));
        } else {
            UcxSettings settings = tls.isEmpty()
                    ? UcxSettings.defaults()
                    : UcxSettings.defaults().withTransports(tls);
            ucx = UcxTransferEngine.create(settings);
        }
        try (Arena arena = Arena.ofShared();
                TransferEngine engine = ucx;
                Peer kvstore = ucx.connect(
                        "kvstore",
                        Base64.getDecoder().decode(field(transport, overNixl ? "agentMetadata" : "workerAddress")));
                LocalRegion source = buffer(ucx, arena, (long) total * BLOCK);
                LocalRegion sink = buffer(ucx, arena, (long) total * BLOCK)) {
            sink.segment()
                    .fill((byte) 0); // an engine's KV buffers are resident; first-touch faults are not transfer time
            SplittableRandom random = new SplittableRandom(42);
            for (long i = 0; i < source.segment().byteSize(); i += 8) {
                source.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong());
            }
            List<String> hashes = new ArrayList<>();
            long[] crcs = new long[total];
            for (int i = 0; i < total; i++) {
                byte[] h = new byte[32];
                random.nextBytes(h);
                hashes.add(HEX.formatHex(h));
                CRC32C crc = new CRC32C();
                crc.update(source.segment().asSlice((long) i * BLOCK, BLOCK).asByteBuffer());
                crcs[i] = crc.getValue();
            }
            int batches = total / batch;
            // warm-up: the same store and fetch once, untimed, into a namespace deleted afterwards, so the JIT
            // has compiled both sides' paths before the clock runs (the service is long-lived; Redis has no JIT)
            Clients.run(
                    clients,
                    batches,
                    b -> store(base, warmup, ucx, kvstore, remote, source, hashes, crcs, b * batch, batch));
            Clients.run(
                    clients,
                    batches,
                    b -> fetch(base, warmup, ucx, kvstore, remote, sink, hashes, crcs, b * batch, batch));
            send("DELETE", base + "/v1/namespaces/" + warmup, null);
            for (var s : STEPS) {
                s.reset();
            }
            sink.segment().fill((byte) 0);
            long t0 = System.nanoTime();
            Clients.run(
                    clients,
                    batches,
                    b -> store(base, ns, ucx, kvstore, remote, source, hashes, crcs, b * batch, batch));
            long storeNanos = System.nanoTime() - t0;
            t0 = System.nanoTime();
            Clients.run(
                    clients, batches, b -> fetch(base, ns, ucx, kvstore, remote, sink, hashes, crcs, b * batch, batch));
            long fetchNanos = System.nanoTime() - t0;
            long mismatch = sink.segment().mismatch(source.segment());
            if (mismatch != -1) {
                throw new IllegalStateException("bytes read back differ at offset " + mismatch);
            }
            double bytes = (double) batches * batch * BLOCK;
            System.out.printf(
                    "%s clients=%d store %.2f GB/s fetch %.2f GB/s (%d x 2 MiB blocks, %d per batch, path %s, all bytes verified)%n",
                    overNixl ? "nixl-ucx" : "ucx-" + (tls.isEmpty() ? "default" : tls),
                    clients,
                    bytes / storeNanos,
                    bytes / fetchNanos,
                    batches * batch,
                    batch,
                    kvstore instanceof UcxPeer u ? u.path() : ucx.backend());
            StringBuilder steps = new StringBuilder("  time per step, ms summed over clients:");
            for (int i = 0; i < STEPS.length; i++) {
                steps.append(' ').append(STEP_NAMES[i]).append(' ').append(STEPS[i].sum() / 1_000_000);
            }
            System.out.println(steps);
        }
    }

    private static void store(
            String base,
            String ns,
            TransferEngine ucx,
            Peer peer,
            RemoteRegion remote,
            LocalRegion source,
            List<String> hashes,
            long[] crcs,
            int first,
            int count)
            throws Exception {
        StringBuilder blocks = new StringBuilder("[");
        StringBuilder crcJson = new StringBuilder("{");
        for (int i = first; i < first + count; i++) {
            blocks.append(i == first ? "" : ",")
                    .append("{\"hash\":\"")
                    .append(hashes.get(i))
                    .append("\"}");
            crcJson.append(i == first ? "" : ",")
                    .append('"')
                    .append(hashes.get(i))
                    .append("\":")
                    .append(crcs[i]);
        }
        long t = System.nanoTime();
        String reservation =
                send("POST", base + "/v1/namespaces/" + ns + "/blocks:reserve", "{\"blocks\":" + blocks + "]}");
        List<TransferSpan> spans = new ArrayList<>();
        Matcher slot = Pattern.compile("\\{\"hash\":\"([0-9a-f]+)\",\"address\":(\\d+),\"length\":(\\d+)}")
                .matcher(reservation);
        while (slot.find()) {
            int i = hashes.indexOf(slot.group(1));
            spans.add(new TransferSpan((long) i * BLOCK, Long.parseLong(slot.group(2)) - remote.address(), BLOCK));
        }
        t = step(0, t);
        ucx.post(TransferOp.WRITE, source, peer, remote, spans).get(60, TimeUnit.SECONDS);
        t = step(1, t);
        String commit = send(
                "POST",
                base + "/v1/namespaces/" + ns + "/blocks:commit",
                "{\"reservationId\":\"" + field(reservation, "reservationId") + "\",\"crc32c\":" + crcJson + "}}");
        step(2, t);
        if (!commit.contains("\"failed\":[]")) {
            throw new IllegalStateException("commit refused blocks: " + commit);
        }
    }

    private static void fetch(
            String base,
            String ns,
            TransferEngine ucx,
            Peer peer,
            RemoteRegion remote,
            LocalRegion sink,
            List<String> hashes,
            long[] crcs,
            int first,
            int count)
            throws Exception {
        StringBuilder list = new StringBuilder("[");
        for (int i = first; i < first + count; i++) {
            list.append(i == first ? "" : ",").append('"').append(hashes.get(i)).append('"');
        }
        long t = System.nanoTime();
        String lookup = send(
                "POST",
                base + "/v1/lookup",
                "{\"namespace\":\"" + ns + "\",\"blockHashes\":" + list + "],\"lease\":true}");
        List<TransferSpan> spans = new ArrayList<>();
        Matcher location = Pattern.compile(
                        "\\{\"hash\":\"([0-9a-f]+)\",\"tier\":\"\\w+\",\"address\":(\\d+),\"length\":(\\d+),\"crc32c\":(\\d+)}")
                .matcher(lookup);
        while (location.find()) {
            int i = hashes.indexOf(location.group(1));
            if (Long.parseLong(location.group(4)) != crcs[i]) {
                throw new IllegalStateException("block " + i + " is listed with another CRC32C");
            }
            spans.add(new TransferSpan((long) i * BLOCK, Long.parseLong(location.group(2)) - remote.address(), BLOCK));
        }
        if (spans.size() != count) {
            throw new IllegalStateException("lease located " + spans.size() + " of " + count + " blocks: " + lookup);
        }
        t = step(3, t);
        ucx.post(TransferOp.READ, sink, peer, remote, spans).get(60, TimeUnit.SECONDS);
        t = step(4, t);
        send("DELETE", base + "/v1/leases/" + field(lookup.substring(lookup.indexOf("\"lease\"")), "id"), null);
        step(5, t);
    }

    private static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":\"?([^\",}]+)").matcher(json);
        if (!m.find()) {
            throw new IllegalStateException("no " + name + " in " + json);
        }
        return m.group(1);
    }

    private static String send(String method, String url, String body) throws Exception {
        // the same raw keep-alive HTTP/1.1 client as HttpLoad: the JDK's HttpClient costs more than the server here
        URI uri = URI.create(url);
        RawHttp http = RawHttp.local(uri.getScheme() + "://" + uri.getAuthority());
        RawHttp.Response r = http.send(
                method,
                uri.getRawPath(),
                body == null ? null : "application/json",
                body == null ? List.of() : List.of(body.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        String text = http.text(r);
        if (r.status() >= 300 && !(method.equals("DELETE") && r.status() == 404)) {
            throw new IllegalStateException(method + " " + url + " answered " + r.status() + ": " + text);
        }
        return text;
    }
}
