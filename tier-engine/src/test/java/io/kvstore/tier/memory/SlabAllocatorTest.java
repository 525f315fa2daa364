package io.kvstore.tier.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SlabAllocatorTest {

    private static final long KIB = 1024;

    @Test
    void slotSizesRoundUpTo4KiB() {
        assertThat(SlabAllocator.slotSizeFor(1)).isEqualTo(4096);
        assertThat(SlabAllocator.slotSizeFor(4096)).isEqualTo(4096);
        assertThat(SlabAllocator.slotSizeFor(4097)).isEqualTo(8192);
    }

    @Test
    void slotsAreDistinctAlignedAndWithinCapacity() {
        SlabAllocator slabs = new SlabAllocator(1024 * KIB, 64 * KIB);
        Set<Long> offsets = new HashSet<>();
        long offset;
        while ((offset = slabs.allocate(12 * KIB)) >= 0) {
            assertThat(offset % 4096).isZero();
            assertThat(offset + 12 * KIB).isLessThanOrEqualTo(slabs.capacityBytes());
            assertThat(offsets.add(offset)).isTrue();
        }
        // 16 slabs of 64 KiB hold 5 slots of 12 KiB each
        assertThat(offsets).hasSize(16 * 5);
        assertThat(slabs.usedBytes()).isEqualTo(80 * 12 * KIB);
    }

    @Test
    void emptiedSlabGoesBackForAnotherSlotSize() {
        SlabAllocator slabs = new SlabAllocator(128 * KIB, 64 * KIB);
        List<Long> small = new ArrayList<>();
        long offset;
        while ((offset = slabs.allocate(4 * KIB)) >= 0) {
            small.add(offset);
        }
        assertThat(slabs.allocate(32 * KIB)).isEqualTo(-1);
        // free exactly one slab's worth of small slots
        long firstSlab = small.getFirst() / (64 * KIB);
        small.stream().filter(o -> o / (64 * KIB) == firstSlab).forEach(o -> slabs.free(o, 4 * KIB));
        assertThat(slabs.allocate(32 * KIB)).isGreaterThanOrEqualTo(0);
    }

    @Test
    void doubleFreeIsRefused() {
        SlabAllocator slabs = new SlabAllocator(128 * KIB, 64 * KIB);
        long a = slabs.allocate(4 * KIB);
        slabs.allocate(4 * KIB);
        slabs.free(a, 4 * KIB);
        assertThatThrownBy(() -> slabs.free(a, 4 * KIB))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("freed twice");
    }

    @Test
    void blockLargerThanSlabIsRefusedWithAdvice() {
        SlabAllocator slabs = new SlabAllocator(256 * KIB, 64 * KIB);
        assertThatThrownBy(() -> slabs.allocate(128 * KIB))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("slab-size");
    }

    @Test
    void withheldSlabsHandOutNoSlotUntilRestored() {
        SlabAllocator slabs = new SlabAllocator(4 * 64 * KIB, 64 * KIB);
        long first = slabs.allocate(16 * KIB); // slab 0 is cut into 16 KiB slots
        assertThat(first / (64 * KIB)).isZero();

        assertThat(slabs.withhold(0, 2)).isEqualTo(2);
        assertThat(slabs.usableBytes()).isEqualTo(2 * 64 * KIB);
        Set<Long> slabsUsed = new HashSet<>();
        long offset;
        while ((offset = slabs.allocate(16 * KIB)) >= 0) {
            slabsUsed.add(offset / (64 * KIB));
        }
        assertThat(slabsUsed).containsExactlyInAnyOrder(2L, 3L);

        slabs.free(first, 16 * KIB); // slab 0 empties while withheld: it does not go back to the pool
        assertThat(slabs.allocate(64 * KIB)).isEqualTo(-1);
        assertThat(slabs.restore(0, 4)).isEqualTo(2);
        assertThat(slabs.usableBytes()).isEqualTo(4 * 64 * KIB);
        Set<Long> restored = new HashSet<>();
        restored.add(slabs.allocate(64 * KIB) / (64 * KIB));
        restored.add(slabs.allocate(64 * KIB) / (64 * KIB));
        assertThat(restored).containsExactlyInAnyOrder(0L, 1L);
    }
}
