package io.kvstore.transfer.local;

import io.kvstore.transfer.TransferSpan;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.List;

/**
 * Moves blocks inside this process: memcpy between two host segments, and positional reads and
 * writes between a host segment and a file. Spans are coalesced first, so consecutive blocks cost
 * one copy or one system call loop. Bytes go straight between the off-heap segment and the kernel
 * (a direct {@link ByteBuffer} view), never through the Java heap.
 */
public final class LocalCopier {

    private LocalCopier() {}

    /** Copies each span from {@code source} at its remote offset into {@code target} at its local offset. */
    public static long copy(MemorySegment source, MemorySegment target, List<TransferSpan> spans) {
        long bytes = 0;
        for (TransferSpan s : TransferSpan.coalesce(spans)) {
            MemorySegment.copy(source, s.remoteOffset(), target, s.localOffset(), s.length());
            bytes += s.length();
        }
        return bytes;
    }

    /** Writes each span of {@code source} (local offset) to {@code file} at the span's remote offset. */
    public static long write(MemorySegment source, FileChannel file, List<TransferSpan> spans) {
        long bytes = 0;
        for (TransferSpan s : TransferSpan.coalesce(spans)) {
            ByteBuffer buf = source.asSlice(s.localOffset(), s.length()).asByteBuffer();
            long position = s.remoteOffset();
            try {
                while (buf.hasRemaining()) {
                    position += file.write(buf, position);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(
                        "pwrite of " + s.length() + " bytes at file offset " + s.remoteOffset() + " failed: "
                                + e.getMessage(),
                        e);
            }
            bytes += s.length();
        }
        return bytes;
    }

    /** Reads each span from {@code file} at its remote offset into {@code target} at its local offset. */
    public static long read(FileChannel file, MemorySegment target, List<TransferSpan> spans) {
        long bytes = 0;
        for (TransferSpan s : TransferSpan.coalesce(spans)) {
            ByteBuffer buf = target.asSlice(s.localOffset(), s.length()).asByteBuffer();
            long position = s.remoteOffset();
            try {
                while (buf.hasRemaining()) {
                    int n = file.read(buf, position);
                    if (n < 0) {
                        throw new IOException("end of file at offset " + position + ", span " + s);
                    }
                    position += n;
                }
            } catch (IOException e) {
                throw new UncheckedIOException(
                        "pread of " + s.length() + " bytes at file offset " + s.remoteOffset() + " failed: "
                                + e.getMessage(),
                        e);
            }
            bytes += s.length();
        }
        return bytes;
    }
}
