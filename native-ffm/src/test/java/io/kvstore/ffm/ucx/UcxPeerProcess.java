package io.kvstore.ffm.ucx;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.zip.CRC32C;

/**
 * The far side of {@link UcxTwoProcessTest}, run in its own JVM: registers a region, prints its worker
 * address, region address and remote key, then answers commands on stdin ("crc", "fill", "quit").
 */
public final class UcxPeerProcess {

    public static void main(String[] args) throws Exception {
        long size = Long.parseLong(args[0]);
        HexFormat hex = HexFormat.of();
        try (Arena arena = Arena.ofShared();
                UcpContext context = new UcpContext(Ucp.FEATURE_RMA);
                UcpWorker worker = context.newWorker()) {
            worker.startProgressThread("ucx-peer-progress");
            MemorySegment region = arena.allocate(size, 4096);
            try (UcpMemory memory = context.map(region)) {
                System.out.println("ADDRESS " + hex.formatHex(worker.address()));
                System.out.println("REGION " + region.address() + " " + hex.formatHex(memory.packedKey()));
                System.out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                String line;
                while ((line = in.readLine()) != null) {
                    switch (line.trim()) {
                        case "crc" -> {
                            CRC32C crc = new CRC32C();
                            for (long off = 0; off < size; off += 1 << 30) {
                                crc.update(region.asSlice(off, Math.min(1L << 30, size - off)).asByteBuffer());
                            }
                            System.out.println("CRC " + crc.getValue());
                        }
                        case "fill" -> {
                            for (long i = 0; i < size; i += 8) {
                                region.set(java.lang.foreign.ValueLayout.JAVA_LONG, i, ~i * 31);
                            }
                            System.out.println("FILLED");
                        }
                        case "quit" -> {
                            return;
                        }
                        default -> System.out.println("UNKNOWN " + line);
                    }
                    System.out.flush();
                }
            }
        }
    }
}
