package io.kvstore.bench.ucx;

import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import io.kvstore.transfer.Peer;
import io.kvstore.transfer.TransferEngine;
import io.kvstore.transfer.TransferOp;
import io.kvstore.transfer.TransferSpan;
import io.kvstore.transfer.nixl.NixlTransferEngine;
import io.kvstore.transfer.ucx.UcxPeer;
import io.kvstore.transfer.ucx.UcxSettings;
import io.kvstore.transfer.ucx.UcxTransferEngine;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The one-sided data plane's two libraries side by side, without HTTP: WRITE and READ bandwidth of
 * batches of 2 MiB blocks between two transfer engines in one JVM (own agents or UCX contexts), as the
 * service's one-sided path moves them. Three set-ups in the same run:
 *
 * <ul>
 *   <li>{@code nixl}: two {@link NixlTransferEngine}s (NIXL's UCX backend), ordinary page-aligned host
 *       memory registered as {@code DRAM_SEG} on both sides (what the service registers over NIXL);
 *   <li>{@code ucx-registered}: two {@link UcxTransferEngine}s with the same kind of memory registered
 *       ({@code ucp_mem_map} of existing memory, as NIXL's UCX backend does);
 *   <li>{@code ucx-allocated}: two {@link UcxTransferEngine}s whose memory UCX allocated (a shared
 *       segment peers on the host map: what the service's DRAM tier uses over direct UCX).
 * </ul>
 *
 * Blocks are mapped in reverse order over a 256 MiB working set so no two coalesce. Prints
 * {@code setup op MiB/s path} per line. Arguments: set-ups (comma-separated, default all three),
 * seconds per point (default 2), blocks per batch (default 8).
 */
public final class DataPlaneBandwidth {

    private static final long BLOCK = 2L << 20;
    private static final long WORKING_SET = 256L << 20;

    public static void main(String[] args) throws Exception {
        List<String> setups = List.of((args.length > 0 ? args[0] : "nixl,ucx-registered,ucx-allocated").split(","));
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 2;
        int batch = args.length > 2 ? Integer.parseInt(args[2]) : 8;
        for (String setup : setups) {
            run(setup, seconds, batch);
        }
    }

    private static void run(String setup, double seconds, int batch) throws Exception {
        try (Arena arena = Arena.ofShared();
                TransferEngine initiator = engine(setup, "initiator");
                TransferEngine target = engine(setup, "target");
                LocalRegion local = region(setup, initiator, arena);
                LocalRegion remote = region(setup, target, arena);
                Peer peer = initiator.connect("target", target.localAddress())) {
            local.segment().fill((byte) 1);
            remote.segment().fill((byte) 2);
            for (TransferOp op : List.of(TransferOp.WRITE, TransferOp.READ)) {
                double mibs = measure(initiator, op, local, peer, remote, batch, seconds);
                System.out.printf(
                        "%s %s %.0f %s%n",
                        setup,
                        op == TransferOp.WRITE ? "write" : "read",
                        mibs,
                        peer instanceof UcxPeer u ? u.path() : initiator.backend());
            }
        }
    }

    private static TransferEngine engine(String setup, String name) {
        return switch (setup) {
            case "nixl" ->
                new NixlTransferEngine(
                        "bench-" + name + "-" + ProcessHandle.current().pid(), Set.of("UCX"), Duration.ofSeconds(60));
            case "ucx-registered", "ucx-allocated" -> UcxTransferEngine.create(UcxSettings.defaults());
            default -> throw new IllegalArgumentException("unknown set-up " + setup);
        };
    }

    private static LocalRegion region(String setup, TransferEngine engine, Arena arena) {
        if (setup.equals("ucx-allocated")) {
            return ((UcxTransferEngine) engine).allocate(WORKING_SET);
        }
        return engine.register(arena.allocate(WORKING_SET, 4096), MemoryKind.DRAM);
    }

    private static double measure(
            TransferEngine engine,
            TransferOp op,
            LocalRegion local,
            Peer peer,
            LocalRegion remote,
            int batch,
            double seconds)
            throws Exception {
        long blocks = WORKING_SET / BLOCK;
        List<List<TransferSpan>> batches = new ArrayList<>();
        for (long first = 0; first + batch <= blocks; first += batch) {
            List<TransferSpan> spans = new ArrayList<>();
            for (long i = first; i < first + batch; i++) {
                spans.add(new TransferSpan(i * BLOCK, (blocks - 1 - i) * BLOCK, BLOCK));
            }
            batches.add(spans);
        }
        for (List<TransferSpan> spans : batches) { // warm-up: every block once
            engine.post(op, local, peer, remote.describe(), spans).get(60, TimeUnit.SECONDS);
        }
        long bytes = 0;
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        for (int i = 0; System.nanoTime() < end; i++) {
            bytes += engine.post(op, local, peer, remote.describe(), batches.get(i % batches.size()))
                    .get(60, TimeUnit.SECONDS)
                    .bytes();
        }
        return bytes / ((System.nanoTime() - start) / 1e9) / (1 << 20);
    }
}
