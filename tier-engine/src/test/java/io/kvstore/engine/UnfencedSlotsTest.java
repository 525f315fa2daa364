package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.TierId;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * What {@link UnfencedSlots} keeps of a writer once it ended: nothing of one gone (its process writes no more),
 * and of one lost (never watched again, maybe still writing) its ranges alone, as no one's, without the writer.
 */
class UnfencedSlotsTest {

    private static final int SLOT = 4096;

    /** A writer whose state the test sets, as the control socket's client would answer it. */
    private static Supplier<WriterState> writer(AtomicReference<WriterState> state) {
        return state::get;
    }

    @Test
    void aWriterGoneTakesItsRangesAndIsNoLongerHeld() {
        UnfencedSlots slots = new UnfencedSlots();
        AtomicReference<WriterState> state = new AtomicReference<>(WriterState.UNWATCHED);
        slots.remember(TierId.DRAM, 0, SLOT, writer(state));

        assertThat(slots.forgetGone()).isZero();
        assertThat(slots.overlaps(TierId.DRAM, 0, SLOT))
                .as("its writer may still write")
                .isTrue();

        state.set(WriterState.GONE);
        assertThat(slots.forgetGone()).isEqualTo(1);
        assertThat(slots.overlaps(TierId.DRAM, 0, SLOT)).isFalse();
        assertThat(slots.writers()).isZero();
    }

    @Test
    void aWriterLostKeepsItsRangesForGoodButIsNoLongerHeld() {
        UnfencedSlots slots = new UnfencedSlots();
        AtomicReference<WriterState> lost = new AtomicReference<>(WriterState.UNWATCHED);
        AtomicReference<WriterState> other = new AtomicReference<>(WriterState.UNWATCHED);
        Supplier<WriterState> lostWriter = writer(lost);
        slots.remember(TierId.DRAM, 0, SLOT, lostWriter);
        slots.remember(TierId.DRAM, SLOT, SLOT, lostWriter);
        slots.remember(TierId.DRAM, SLOT, SLOT, writer(other)); // the same slot, left by another client too

        lost.set(WriterState.LOST);
        assertThat(slots.forgetGone())
                .as("none forgotten: the lost writer may still write")
                .isZero();
        assertThat(slots.writers()).as("only the other client is held").isEqualTo(1);
        assertThat(slots.overlaps(TierId.DRAM, 0, SLOT)).isTrue();
        assertThat(slots.overlaps(TierId.DRAM, SLOT, SLOT)).isTrue();

        other.set(WriterState.GONE);
        slots.forgetGone();
        assertThat(slots.writers()).isZero();
        assertThat(slots.overlaps(TierId.DRAM, SLOT, SLOT))
                .as("the other client's going leaves the lost one's range")
                .isTrue();
        assertThat(slots.overlaps(TierId.DRAM, 2 * SLOT, SLOT)).isFalse();
    }
}
