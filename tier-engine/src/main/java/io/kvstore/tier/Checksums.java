package io.kvstore.tier;

import io.kvstore.ffm.isal.IsaL;
import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;

/**
 * CRC32C of block bytes. Native memory goes through ISA-L's {@code crc32_iscsi} when libisal is present
 * (about 1.4x the JDK's intrinsic on this project's test machine, see docs/benchmarks.md); heap memory,
 * tiny buffers and machines without libisal use the JDK's {@link CRC32C}. Both give the same value.
 */
public final class Checksums {

    private static final boolean ISAL = IsaL.availability().available();
    /** Below this the downcall costs more than ISA-L saves. */
    private static final long ISAL_MIN_BYTES = 256;

    private Checksums() {}

    public static int crc32c(MemorySegment bytes) {
        if (ISAL && bytes.isNative() && bytes.byteSize() >= ISAL_MIN_BYTES && bytes.byteSize() <= Integer.MAX_VALUE) {
            return IsaL.crc32c(bytes);
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes.asByteBuffer());
        return (int) crc.getValue();
    }

    /** Which implementation checksums native blocks here, for the start-up log. */
    public static String implementation() {
        return ISAL
                ? "ISA-L crc32_iscsi (" + IsaL.availability().detail() + ")"
                : "the JDK's CRC32C (ISA-L " + IsaL.availability() + ")";
    }
}
