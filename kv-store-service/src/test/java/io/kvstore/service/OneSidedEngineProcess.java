package io.kvstore.service;

import io.kvstore.block.BlockHash;
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
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Stands in for an inference engine on the one-sided path, in its own JVM with its own UCX worker or,
 * when {@code /v1/transport} publishes NIXL agent metadata, its own NIXL agent (UCX backend):
 * {@code roundtrip} reserves slots, WRITEs its blocks into kvstore's memory, commits them with their
 * CRC32C, looks the prompt up with a lease, READs every block back from the lease's locations and
 * compares, then releases; {@code lease-and-die} takes a lease, prints its id and waits to be killed.
 *
 * <p>Arguments: base URL, namespace, block count, seed, UCX transports ("" for UCX's choice), mode.
 */
public final class OneSidedEngineProcess {

    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final JsonMapper JSON = JsonMapper.builder().build();

    public static void main(String[] args) throws Exception {
        String base = args[0];
        String ns = args[1];
        int count = Integer.parseInt(args[2]);
        int seed = Integer.parseInt(args[3]);
        String tls = args[4];
        String mode = args[5];
        int[] tokens = TestLayout.tokens(count, seed);
        List<BlockHash> hashes = TestLayout.hashes(tokens);
        List<byte[]> blocks = TestLayout.blocks(count, seed);
        int block = TestLayout.BLOCK_BYTES;

        if (mode.equals("lease-and-die")) {
            JsonNode lookup = post(base + "/v1/lookup", Map.of("namespace", ns, "tokenIds", tokens, "lease", true));
            System.out.println("LEASE " + lookup.get("lease").get("id").asString() + " "
                    + lookup.get("matchedBlocks").asInt());
            System.out.flush();
            Thread.sleep(TimeUnit.MINUTES.toMillis(10));
            return;
        }

        JsonNode transport = get(base + "/v1/transport");
        if (!transport.get("available").asBoolean()) {
            fail("transport unavailable: " + transport.get("reason").asString());
        }
        JsonNode r0 = transport.get("regions").get(0);
        RemoteRegion remote = new RemoteRegion(
                r0.get("address").asLong(),
                r0.get("length").asLong(),
                Base64.getDecoder().decode(r0.get("remoteKey").asString()));
        boolean overNixl = transport.has("agentMetadata");
        try (Arena arena = Arena.ofShared();
                Side side = overNixl
                        ? nixl(arena, transport, (long) count * block)
                        : ucx(tls, transport, (long) count * block)) {
            TransferEngine engine = side.engine();
            Peer kvstore = side.kvstore();
            LocalRegion out = side.out();
            LocalRegion in = side.in();
            // reserve, WRITE, commit
            List<Map<String, Object>> wanted = new ArrayList<>();
            Map<String, Long> crcs = new LinkedHashMap<>();
            Map<String, Integer> index = new LinkedHashMap<>();
            for (int i = 0; i < count; i++) {
                Map<String, Object> b = new LinkedHashMap<>();
                b.put("hash", hashes.get(i).hex());
                if (i > 0) {
                    b.put("parent", hashes.get(i - 1).hex());
                }
                wanted.add(b);
                MemorySegment.copy(MemorySegment.ofArray(blocks.get(i)), 0, out.segment(), (long) i * block, block);
                CRC32C crc = new CRC32C();
                crc.update(blocks.get(i));
                crcs.put(hashes.get(i).hex(), crc.getValue());
                index.put(hashes.get(i).hex(), i);
            }
            JsonNode reservation = post(base + "/v1/namespaces/" + ns + "/blocks:reserve", Map.of("blocks", wanted));
            List<TransferSpan> writes = new ArrayList<>();
            for (JsonNode slot : reservation.get("slots")) {
                int i = index.get(slot.get("hash").asString());
                writes.add(new TransferSpan(
                        (long) i * block,
                        slot.get("address").asLong() - remote.address(),
                        slot.get("length").asInt()));
            }
            long t0 = System.nanoTime();
            engine.post(TransferOp.WRITE, out, kvstore, remote, writes).get(60, TimeUnit.SECONDS);
            long writeNanos = System.nanoTime() - t0;
            JsonNode commit = post(
                    base + "/v1/namespaces/" + ns + "/blocks:commit",
                    Map.of("reservationId", reservation.get("reservationId").asString(), "crc32c", crcs));
            if (!commit.get("failed").isEmpty()) {
                fail("commit refused blocks: " + commit.get("failed"));
            }
            int stored =
                    commit.get("committed").size() + commit.get("alreadyStored").size();

            // look up with a lease, READ in place, compare
            JsonNode lookup = post(base + "/v1/lookup", Map.of("namespace", ns, "tokenIds", tokens, "lease", true));
            if (lookup.get("matchedBlocks").asInt() != count) {
                fail("lookup matched " + lookup.get("matchedBlocks").asInt() + " of " + count + " blocks");
            }
            JsonNode lease = lookup.get("lease");
            List<TransferSpan> reads = new ArrayList<>();
            for (JsonNode location : lease.get("locations")) {
                if (!location.has("address")) {
                    fail("leased block " + location.get("hash").asString() + " has no location");
                }
                int i = index.get(location.get("hash").asString());
                if (location.get("crc32c").asLong()
                        != crcs.get(location.get("hash").asString())) {
                    fail("block " + i + " is listed with another CRC32C than the one written");
                }
                reads.add(new TransferSpan(
                        (long) i * block,
                        location.get("address").asLong() - remote.address(),
                        location.get("length").asInt()));
            }
            t0 = System.nanoTime();
            engine.post(TransferOp.READ, in, kvstore, remote, reads).get(60, TimeUnit.SECONDS);
            long readNanos = System.nanoTime() - t0;
            long mismatch = in.segment().mismatch(out.segment());
            if (mismatch != -1) {
                fail("bytes read back differ from those written at offset " + mismatch + " (block " + mismatch / block
                        + ")");
            }
            send("DELETE", base + "/v1/leases/" + lease.get("id").asString(), null);
            System.out.printf(
                    "OK %d blocks reserved, written, committed (%d stored), leased and read back byte-exact; "
                            + "path %s; WRITE %.1f MB/s, READ %.1f MB/s%n",
                    count,
                    stored,
                    kvstore instanceof UcxPeer u ? u.path() : engine.backend(),
                    (double) count * block * 1e3 / writeNanos,
                    (double) count * block * 1e3 / readNanos);
        }
    }

    /** The engine's side of the one-sided path: its transfer engine, kvstore as a peer, its two buffers. */
    private record Side(TransferEngine engine, Peer kvstore, LocalRegion out, LocalRegion in) implements AutoCloseable {
        @Override
        public void close() {
            in.close();
            out.close();
            kvstore.close();
            engine.close();
        }
    }

    /** Direct UCX: a worker of its own, connected to kvstore's worker address; buffers UCX allocates. */
    private static Side ucx(String tls, JsonNode transport, long bytes) {
        UcxSettings settings =
                tls.isEmpty() ? UcxSettings.defaults() : UcxSettings.defaults().withTransports(tls);
        UcxTransferEngine ucx = UcxTransferEngine.create(settings);
        UcxPeer kvstore = ucx.connect(
                "kvstore",
                Base64.getDecoder().decode(transport.get("workerAddress").asString()));
        return new Side(ucx, kvstore, ucx.allocate(bytes), ucx.allocate(bytes));
    }

    /**
     * NIXL: an agent of its own with the UCX backend, its buffers registered as DRAM_SEG, kvstore's
     * agent metadata loaded; the region's descriptor comes from /v1/transport like any engine's would.
     */
    private static Side nixl(Arena arena, JsonNode transport, long bytes) {
        JsonNode r0 = transport.get("regions").get(0);
        if (!"DRAM_SEG".equals(r0.get("segmentType").asString())) {
            fail("region published with segment type " + r0.get("segmentType"));
        }
        NixlTransferEngine nixl = new NixlTransferEngine(
                "engine-" + ProcessHandle.current().pid(), Set.of("UCX"), java.time.Duration.ofSeconds(60));
        LocalRegion out = nixl.register(arena.allocate(bytes, 4096), MemoryKind.DRAM);
        LocalRegion in = nixl.register(arena.allocate(bytes, 4096), MemoryKind.DRAM);
        Peer kvstore = nixl.connect(
                "kvstore",
                Base64.getDecoder().decode(transport.get("agentMetadata").asString()));
        return new Side(nixl, kvstore, out, in);
    }

    private static void fail(String why) {
        System.out.println("FAIL " + why);
        System.out.flush();
        System.exit(1);
    }

    private static JsonNode get(String url) throws Exception {
        return send("GET", url, null);
    }

    private static JsonNode post(String url, Object body) throws Exception {
        return send("POST", url, JSON.writeValueAsString(body));
    }

    private static JsonNode send(String method, String url, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url));
        b.method(
                method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() >= 300) {
            fail(method + " " + url + " answered " + r.statusCode() + ": " + r.body());
        }
        return r.body().isEmpty() ? JSON.createObjectNode() : JSON.readTree(r.body());
    }
}
