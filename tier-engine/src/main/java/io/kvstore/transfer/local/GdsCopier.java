package io.kvstore.transfer.local;

import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.ffm.cufile.CuFileHandle;
import io.kvstore.transfer.TransferException;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Moves blocks between GPU memory and a file with GPUDirect Storage (cuFile): the bytes go from the NVMe
 * device straight into VRAM by DMA, never through a host bounce buffer. The local side of each span is
 * an offset into {@code deviceBuffer} (the base of a CUDA allocation, ideally registered with
 * {@link CuFile#registerBuffer}), the remote side an offset into the file. Spans are coalesced first, so
 * consecutive blocks cost one cuFile call. The counterpart of {@link LocalCopier} for VRAM.
 */
public final class GdsCopier {

    private final CuFile cufile;

    public GdsCopier(CuFile cufile) {
        this.cufile = cufile;
    }

    /** Writes each span of {@code deviceBuffer} (local offset) into {@code file} at the span's remote offset. */
    public long write(MemorySegment deviceBuffer, CuFileHandle file, List<TransferSpan> spans) {
        long bytes = 0;
        for (TransferSpan s : TransferSpan.coalesce(spans)) {
            long done = 0;
            while (done < s.length()) {
                long n = cufile.write(
                        file, deviceBuffer, s.length() - done, s.remoteOffset() + done, s.localOffset() + done);
                if (n <= 0) {
                    throw new TransferException("cuFileWrite wrote nothing at file offset " + (s.remoteOffset() + done)
                            + " of " + file + " (span " + s + ")");
                }
                done += n;
            }
            bytes += s.length();
        }
        return bytes;
    }

    /** Reads each span from {@code file} at its remote offset into {@code deviceBuffer} at its local offset. */
    public long read(CuFileHandle file, MemorySegment deviceBuffer, List<TransferSpan> spans) {
        long bytes = 0;
        for (TransferSpan s : TransferSpan.coalesce(spans)) {
            long done = 0;
            while (done < s.length()) {
                long n = cufile.read(
                        file, deviceBuffer, s.length() - done, s.remoteOffset() + done, s.localOffset() + done);
                if (n <= 0) {
                    throw new TransferException(
                            "end of " + file + " at offset " + (s.remoteOffset() + done) + " while reading span " + s);
                }
                done += n;
            }
            bytes += s.length();
        }
        return bytes;
    }
}
