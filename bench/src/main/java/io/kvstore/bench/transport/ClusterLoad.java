package io.kvstore.bench.transport;

import io.kvstore.block.BlockHash;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Aggregate fetch bandwidth of a kvstore cluster: 2 MiB blocks of one long prompt are stored through the
 * first node (the cluster spreads them over its members in runs), then {@code clients} clients, spread
 * evenly over the nodes given, fetch random batches of {@code batch} consecutive blocks for {@code seconds};
 * every byte fetched is compared. Arguments: {@code <seconds> <clients> <blocks> <batch> <base-url...>}.
 */
public final class ClusterLoad {

    private static final int BLOCK = 2 << 20;

    private ClusterLoad() {}

    public static void main(String[] args) throws Exception {
        int seconds = Integer.parseInt(args[0]);
        int clients = Integer.parseInt(args[1]);
        int count = Integer.parseInt(args[2]);
        int batch = Integer.parseInt(args[3]);
        List<String> bases = Arrays.asList(args).subList(4, args.length);
        String ns = "cluster-load";
        // 2 layers x 8 KV heads x 128 dims x fp16 x 2 (K,V) x 256 tokens = 2 MiB
        HttpLoad.send("PUT", bases.getFirst() + "/v1/namespaces/" + ns, """
                {"model":"bench","layout":{"layers":2,"kvHeads":8,"headDim":128,"dtype":"float16","blockSize":256},
                 "hashScheme":"sha256_cbor","hashSeed":"0"}""".getBytes());
        HttpLoad.RandomBlocks generated = HttpLoad.randomBlocks(new SplittableRandom(13), count);
        List<byte[]> data = generated.data();
        List<BlockHash> hashes = generated.hashes();
        for (int first = 0; first < count; first += batch) {
            ByteArrayOutputStream frames = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(frames);
            for (int i = first; i < Math.min(count, first + batch); i++) {
                frame(out, hashes.get(i), i == 0 ? null : hashes.get(i - 1), data.get(i));
            }
            HttpLoad.send(
                    "PUT",
                    bases.getFirst() + "/v1/namespaces/" + ns + "/blocks",
                    frames.toByteArray(),
                    "application/octet-stream");
        }
        run(bases, ns, hashes, data, batch, clients, 2); // warm-up
        long bytes = run(bases, ns, hashes, data, batch, clients, seconds);
        System.out.printf(
                "fetch 2 MiB blocks, %d per request, %d clients over %d node(s): %.2f GB/s aggregate (%d blocks stored, all bytes compared)%n",
                batch, clients, bases.size(), bytes / (seconds * 1e9), count);
    }

    private static long run(
            List<String> bases,
            String ns,
            List<BlockHash> hashes,
            List<byte[]> data,
            int batch,
            int clients,
            int seconds)
            throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        List<Future<Long>> done = new ArrayList<>();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < clients; c++) {
                String base = bases.get(c % bases.size());
                SplittableRandom random = new SplittableRandom(c);
                done.add(pool.submit(() -> {
                    long moved = 0;
                    byte[] block = new byte[BLOCK];
                    while (System.nanoTime() < end) {
                        int first = random.nextInt(hashes.size() - batch + 1);
                        StringBuilder body = new StringBuilder("{\"blockHashes\":[");
                        for (int i = first; i < first + batch; i++) {
                            body.append(i == first ? "\"" : ",\"")
                                    .append(hashes.get(i).hex())
                                    .append('"');
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
                        for (int i = first; i < first + batch; i++) {
                            in.readNBytes(in.read());
                            in.readNBytes(in.read());
                            byte[] len = in.readNBytes(4);
                            int length = ((len[0] & 0xff) << 24)
                                    | ((len[1] & 0xff) << 16)
                                    | ((len[2] & 0xff) << 8)
                                    | (len[3] & 0xff);
                            if (length != BLOCK
                                    || in.readNBytes(block, 0, BLOCK) != BLOCK
                                    || !Arrays.equals(block, data.get(i))) {
                                throw new IllegalStateException("block " + i + " came back different");
                            }
                            moved += BLOCK;
                        }
                    }
                    return moved;
                }));
            }
        }
        long total = 0;
        for (Future<Long> f : done) {
            total += f.get();
        }
        RawHttp.closeAll();
        return total;
    }

    private static void frame(DataOutputStream out, BlockHash hash, BlockHash parent, byte[] block) throws IOException {
        out.write(hash.length());
        out.write(hash.toBytes());
        if (parent == null) {
            out.write(0);
        } else {
            out.write(parent.length());
            out.write(parent.toBytes());
        }
        out.writeInt(block.length);
        out.write(block);
    }
}
