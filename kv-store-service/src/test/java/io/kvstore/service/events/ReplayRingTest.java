package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Which held batches a replay request gets. */
class ReplayRingTest {

    private static ReplayRing holding(int batches) {
        ReplayRing ring = new ReplayRing(8);
        for (int seq = 0; seq < batches; seq++) {
            ring.add(new ReplayRing.Published(new byte[0], seq, new byte[] {(byte) seq}));
        }
        return ring;
    }

    @Test
    void aReplayFromASequenceNumberGetsThatBatchAndTheOnesAfter() {
        assertThat(holding(5).from(3)).extracting(ReplayRing.Published::seq).containsExactly(3L, 4L);
    }

    /**
     * The start is an unsigned 8-byte number, as vLLM reads it ({@code int.from_bytes(..., "big")}): one of
     * 2^63 or more is past every batch held, so nothing is replayed (read as signed, it replayed everything).
     */
    @Test
    void aStartOfTwoToTheSixtyThreeOrMoreIsPastEveryBatch() {
        assertThat(holding(5).from(Long.MIN_VALUE)).isEmpty();
        assertThat(holding(5).from(-1L)).isEmpty();
    }
}
