package io.kvstore.bench.ucx;

import io.kvstore.ffm.ucx.RemoteKey;
import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.ffm.ucx.UcpContext;
import io.kvstore.ffm.ucx.UcpEndpoint;
import io.kvstore.ffm.ucx.UcpMemory;
import io.kvstore.ffm.ucx.UcpWorker;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.HexFormat;

/**
 * UCX put/get bandwidth of kvstore's binding between two processes, for comparison with ucx_perftest.
 * Usage: UcxBandwidth MESSAGE_BYTES TOTAL_BYTES (forks itself as the peer). Rotates over a 1 GiB region
 * with eight requests in flight.
 * Prints "put MB/s get MB/s".
 */
public final class UcxBandwidth {

    private static final long REGION = 1L << 30;
    /** Requests in flight, as UcxTransferEngine keeps them. */
    private static final int WINDOW = 8;

    public static void main(String[] args) throws Exception {
        if (args[0].equals("peer")) {
            peer();
            return;
        }
        int message = Integer.parseInt(args[0]);
        long total = Long.parseLong(args[1]);
        String java = ProcessHandle.current().info().command().orElse("java");
        Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), UcxBandwidth.class.getName(), "peer")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream()));
                Arena arena = Arena.ofShared();
                UcpContext context = new UcpContext(Ucp.FEATURE_RMA);
                UcpWorker worker = context.newWorker()) {
            byte[] address = HexFormat.of().parseHex(out.readLine());
            String[] region = out.readLine().split(" ");
            long remote = Long.parseLong(region[0]);
            MemorySegment local = arena.allocate(REGION, 4096);
            local.fill((byte) 7);
            Duration timeout = Duration.ofSeconds(30);
            try (UcpMemory registered = context.map(local);
                    UcpEndpoint endpoint = worker.connect(address, !"0".equals(System.getenv("KVSTORE_UCX_PEER_ERRORS")));
                    RemoteKey key = endpoint.unpack(HexFormat.of().parseHex(region[1]))) {
                long slots = REGION / message;
                long count = total / message;
                for (int warm = 0; warm < 2; warm++) {
                    for (long i = 0; i < Math.min(count, 64); i++) {
                        endpoint.put(local.asSlice(i % slots * message, message), remote + i % slots * message, key, timeout);
                    }
                }
                long start = System.nanoTime();
                java.util.ArrayDeque<io.kvstore.ffm.ucx.UcpRequest> window = new java.util.ArrayDeque<>();
                for (long i = 0; i < count; i++) {
                    long off = i % slots * message;
                    if (window.size() == WINDOW) {
                        worker.await(window.poll(), timeout);
                    }
                    window.add(endpoint.putAsync(local.asSlice(off, message), remote + off, key));
                }
                while (!window.isEmpty()) {
                    worker.await(window.poll(), timeout);
                }
                endpoint.flush(timeout);
                double put = (double) count * message / ((System.nanoTime() - start) / 1e9) / 1e6;
                start = System.nanoTime();
                for (long i = 0; i < count; i++) {
                    long off = i % slots * message;
                    if (window.size() == WINDOW) {
                        worker.await(window.poll(), timeout);
                    }
                    window.add(endpoint.getAsync(local.asSlice(off, message), remote + off, key));
                }
                while (!window.isEmpty()) {
                    worker.await(window.poll(), timeout);
                }
                double get = (double) count * message / ((System.nanoTime() - start) / 1e9) / 1e6;
                System.out.printf("%.0f %.0f%n", put, get);
            }
        } finally {
            p.destroyForcibly();
        }
    }

    private static void peer() throws Exception {
        try (Arena arena = Arena.ofShared();
                UcpContext context = new UcpContext(Ucp.FEATURE_RMA);
                UcpWorker worker = context.newWorker()) {
            worker.startProgressThread("peer-progress");
            MemorySegment region = arena.allocate(REGION, 4096);
            try (UcpMemory memory = context.map(region)) {
                System.out.println(HexFormat.of().formatHex(worker.address()));
                System.out.println(region.address() + " " + HexFormat.of().formatHex(memory.packedKey()));
                System.out.flush();
                Thread.sleep(Long.MAX_VALUE);
            }
        }
    }
}
