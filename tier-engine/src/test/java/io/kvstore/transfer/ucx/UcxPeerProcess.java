package io.kvstore.transfer.ucx;

import io.kvstore.transfer.LocalRegion;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * The other process of {@link UcxTwoProcessTest}: registers a region filled with a known pattern,
 * prints its worker address and region key on stdout, then answers {@code crc} until stdin closes.
 * Arguments: UCX_TLS value, region size in MiB, block size in bytes, pattern seed.
 */
public final class UcxPeerProcess {

    public static void main(String[] args) throws Exception {
        String tls = args[0];
        long size = Long.parseLong(args[1]) << 20;
        long block = Long.parseLong(args[2]);
        long seed = Long.parseLong(args[3]);
        HexFormat hex = HexFormat.of();
        try (Arena arena = Arena.ofShared();
                UcxTransferEngine engine =
                        UcxTransferEngine.create(UcxSettings.defaults().withTransports(tls))) {
            try (LocalRegion region = engine.allocate(size)) {
                MemorySegment segment = region.segment();
                Patterns.fillRegion(segment, block, seed);
                System.out.println("READY " + hex.formatHex(engine.localAddress()) + " " + segment.address() + " "
                        + size + " " + hex.formatHex(region.remoteKey()));
                System.out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line;
                while ((line = in.readLine()) != null && !line.equals("quit")) {
                    if (line.equals("crc")) {
                        System.out.println("CRC " + Patterns.crc(segment));
                        System.out.flush();
                    }
                }
            }
        }
    }
}
