package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import io.kvstore.service.KvStoreApplication;
import io.kvstore.service.ServiceProcesses;
import io.kvstore.service.blocks.BlockFrames;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Starts kvstore nodes of one cluster (in this JVM or as their own processes) and talks to them over HTTP. */
final class ClusterNodes {

    static final String ADMIN_TOKEN = "cluster-admin";
    /** Every node's {@code kvstore.cluster.secret}: peers sign the callers they forward with it. */
    static final String SECRET = "cluster-secret-0123456789";
    /** A namespace every node keeps two copies of ({@code kvstore.cluster.namespace-replicas}). */
    static final String REPLICATED = "twice";
    /** 1 layer x 1 KV head x 64 dims x fp16 x 16 tokens, K and V: 4 KiB blocks. */
    static final int BLOCK_BYTES = 2 * 64 * 2 * 16;

    static final String DECLARATION = """
            {"model":"m","layout":{"layers":1,"kvHeads":1,"headDim":64,"dtype":"float16","blockSize":16},
             "hashScheme":"sha256_cbor","hashSeed":"0"}""";

    static final HttpClient HTTP =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private ClusterNodes() {}

    static List<String> args(String etcd, String name, int port, Path dataDir, String prefix) {
        return List.of(
                "--server.port=" + port,
                "--server.address=127.0.0.1",
                "--kvstore.data-dir=" + dataDir,
                "--kvstore.admin-token=" + ADMIN_TOKEN,
                "--kvstore.tiers.dram.capacity=64MB",
                "--kvstore.tiers.dram.slab-size=4MB",
                "--kvstore.tiers.nvme.enabled=false",
                "--kvstore.transport.enabled=false",
                "--kvstore.cluster.enabled=true",
                "--kvstore.cluster.secret=" + SECRET,
                "--kvstore.cluster.endpoints=" + etcd,
                "--kvstore.cluster.node-name=" + name,
                "--kvstore.cluster.advertised-address=http://127.0.0.1:" + port,
                "--kvstore.cluster.key-prefix=" + prefix,
                "--kvstore.cluster.ttl=3s",
                "--kvstore.cluster.run-blocks=8",
                "--kvstore.cluster.namespace-replicas." + REPLICATED + "=2",
                "--kvstore.cluster.peer-timeout=5s");
    }

    /** A node in this JVM. */
    record Node(String name, int port, ConfigurableApplicationContext context) implements AutoCloseable {
        String base() {
            return "http://127.0.0.1:" + port;
        }

        /** This run of the node, which calls signed for it name. */
        String boot() {
            return context.getBean(io.kvstore.service.security.PeerCredentials.class)
                    .boot();
        }

        @Override
        public void close() {
            context.close();
        }
    }

    static Node start(String etcd, String name, Path dir, String prefix, String... extra) throws IOException {
        int port = ServiceProcesses.freePort();
        List<String> args = new ArrayList<>(args(etcd, name, port, dir.resolve(name), prefix));
        args.addAll(List.of(extra));
        var context = new SpringApplicationBuilder(KvStoreApplication.class).run(args.toArray(String[]::new));
        return new Node(name, port, context);
    }

    /** A chain of distinct block hashes, as a prompt's (32 bytes, like sha256_cbor). */
    static List<BlockHash> chain(int length, long seed) {
        Random r = new Random(seed);
        List<BlockHash> out = new ArrayList<>();
        for (int i = 0; i < length; i++) {
            byte[] h = new byte[32];
            r.nextBytes(h);
            out.add(BlockHash.of(h));
        }
        return out;
    }

    static byte[] content(BlockHash hash) {
        byte[] b = new byte[BLOCK_BYTES];
        new Random(hash.asLong()).nextBytes(b);
        return b;
    }

    /** One frame: {@code hash} (no parent) with {@code content}. */
    static byte[] frame(BlockHash hash, byte[] content) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new BlockFrames.Writer(out)
                .write(new BlockFrames.Header(hash, null, content.length), MemorySegment.ofArray(content));
        return out.toByteArray();
    }

    /** Frames for {@code chain[from, to)}, each with its parent (null for the prompt's first block). */
    static byte[] frames(List<BlockHash> chain, int from, int to) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BlockFrames.Writer writer = new BlockFrames.Writer(out);
        for (int i = from; i < to; i++) {
            BlockHash parent = i == 0 ? null : chain.get(i - 1);
            writer.write(
                    new BlockFrames.Header(chain.get(i), parent, BLOCK_BYTES),
                    MemorySegment.ofArray(content(chain.get(i))));
        }
        return out.toByteArray();
    }

    static HttpResponse<String> send(String base, String method, String path, String json, String... headers)
            throws IOException, InterruptedException {
        var b = HttpRequest.newBuilder(URI.create(base + path))
                .method(
                        method,
                        json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        if (json != null) {
            b.header("Content-Type", "application/json");
        }
        if (headers.length > 0) {
            b.headers(headers);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> store(String base, String ns, byte[] frames, String... headers)
            throws IOException, InterruptedException {
        var b = HttpRequest.newBuilder(URI.create(base + "/v1/namespaces/" + ns + "/blocks"))
                .header("Content-Type", "application/octet-stream")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(frames));
        if (headers.length > 0) {
            b.headers(headers);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<byte[]> fetch(String base, String ns, List<BlockHash> hashes, String... headers)
            throws IOException, InterruptedException {
        var b = HttpRequest.newBuilder(URI.create(base + "/v1/namespaces/" + ns + "/blocks:fetch"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"blockHashes\":" + hexList(hashes) + "}"));
        if (headers.length > 0) {
            b.headers(headers);
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    static String lookupJson(String ns, List<BlockHash> hashes, boolean lease) {
        return "{\"namespace\":\"" + ns + "\",\"blockHashes\":" + hexList(hashes) + ",\"lease\":" + lease + "}";
    }

    static String hexList(List<BlockHash> hashes) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < hashes.size(); i++) {
            sb.append(i == 0 ? "\"" : ",\"").append(hashes.get(i).hex()).append('"');
        }
        return sb.append(']').toString();
    }
}
