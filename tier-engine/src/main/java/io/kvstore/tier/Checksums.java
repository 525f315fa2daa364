package io.kvstore.tier;

import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;

/** CRC32C of off-heap block bytes, using the JDK's intrinsic (SSE4.2/ARMv8 CRC instructions). */
public final class Checksums {

    private Checksums() {
    }

    public static int crc32c(MemorySegment bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes.asByteBuffer());
        return (int) crc.getValue();
    }
}
