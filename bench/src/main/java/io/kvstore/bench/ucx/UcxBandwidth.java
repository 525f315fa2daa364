package io.kvstore.bench.ucx;

import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.TransferOp;
import io.kvstore.transfer.TransferSpan;
import io.kvstore.transfer.ucx.UcxPath;
import io.kvstore.transfer.ucx.UcxPeer;
import io.kvstore.transfer.ucx.UcxSettings;
import io.kvstore.transfer.ucx.UcxTransferEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * PUT (WRITE) and GET (READ) bandwidth of {@link UcxTransferEngine} between two engines with their
 * own UCX contexts, for comparison with ucx_perftest on the same transport (bench/ucx.sh). Messages
 * are mapped in reverse order over a 256 MiB working set so none coalesce: each is one UCX message
 * of the given size. Prints {@code op size MiB/s path}.
 *
 * <p>With {@code -Dkvstore.bench.reuse=true} every message instead moves the same first {@code size} bytes to
 * the same remote offset, as ucx_perftest does with its single buffer: small messages then run from cache on
 * both sides, so this mode compares the engine's per-message cost with perftest's like for like.
 *
 * <p>Arguments: UCX_TLS value, path (AUTO, RMA, ACTIVE_MESSAGES), seconds per point, sizes...
 */
public final class UcxBandwidth {

    private static final long WORKING_SET = 256L << 20;
    private static final boolean REUSE = Boolean.getBoolean("kvstore.bench.reuse");

    public static void main(String[] args) throws Exception {
        String tls = args[0];
        UcxPath path = UcxPath.valueOf(args[1]);
        double seconds = Double.parseDouble(args[2]);
        UcxSettings settings =
                UcxSettings.defaults().withTransports(tls).withPath(path).withMaxMessageBytes(64L << 20);
        try (UcxTransferEngine initiator = UcxTransferEngine.create(settings);
                UcxTransferEngine target = UcxTransferEngine.create(settings);
                LocalRegion local = initiator.allocate(WORKING_SET);
                LocalRegion remote = target.allocate(WORKING_SET);
                UcxPeer peer = initiator.connect("target", target.localAddress())) {
            local.segment().fill((byte) 1);
            remote.segment().fill((byte) 2);
            for (int i = 3; i < args.length; i++) {
                long size = Long.parseLong(args[i]);
                for (TransferOp op : List.of(TransferOp.WRITE, TransferOp.READ)) {
                    double mibs = measure(initiator, op, local, peer, remote, size, seconds);
                    System.out.printf(
                            "%s %d %.0f %s%n", op == TransferOp.WRITE ? "put" : "get", size, mibs, peer.path());
                }
            }
        }
    }

    private static double measure(
            UcxTransferEngine engine,
            TransferOp op,
            LocalRegion local,
            UcxPeer peer,
            LocalRegion remote,
            long size,
            double seconds)
            throws Exception {
        long blocks = WORKING_SET / size;
        List<TransferSpan> spans = new ArrayList<>();
        for (long i = 0; i < blocks; i++) {
            spans.add(REUSE ? new TransferSpan(0, 0, size) : new TransferSpan(i * size, (blocks - 1 - i) * size, size));
        }
        engine.post(op, local, peer, remote.describe(), spans).get(60, TimeUnit.SECONDS); // warm-up
        long bytes = 0;
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        while (System.nanoTime() < end) {
            bytes += engine.post(op, local, peer, remote.describe(), spans)
                    .get(60, TimeUnit.SECONDS)
                    .bytes();
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        return bytes / elapsed / (1 << 20);
    }
}
