package io.kvstore.transfer;

import java.util.ArrayList;
import java.util.List;

/** One contiguous move: {@code length} bytes at {@code localOffset} of the local region and {@code remoteOffset} of the remote one. */
public record TransferSpan(long localOffset, long remoteOffset, long length) {

    public TransferSpan {
        if (localOffset < 0 || remoteOffset < 0 || length <= 0) {
            throw new IllegalArgumentException(
                    "bad span: local " + localOffset + ", remote " + remoteOffset + ", length " + length);
        }
    }

    /**
     * Merges spans that are adjacent on both sides into one, keeping order; blocks laid out in
     * consecutive slots on both ends then move as one large transfer.
     */
    public static List<TransferSpan> coalesce(List<TransferSpan> spans) {
        List<TransferSpan> merged = new ArrayList<>(spans.size());
        TransferSpan run = null;
        for (TransferSpan s : spans) {
            if (run != null
                    && run.localOffset + run.length == s.localOffset
                    && run.remoteOffset + run.length == s.remoteOffset) {
                run = new TransferSpan(run.localOffset, run.remoteOffset, run.length + s.length);
            } else {
                if (run != null) {
                    merged.add(run);
                }
                run = s;
            }
        }
        if (run != null) {
            merged.add(run);
        }
        return merged;
    }
}
