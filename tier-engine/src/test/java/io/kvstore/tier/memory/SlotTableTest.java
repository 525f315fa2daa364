package io.kvstore.tier.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.TestBlocks;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.TierFullException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class SlotTableTest {

    private static final int BLOCK = 16 * 1024;

    private static BlockRecord record(long id) {
        return new BlockRecord(TestBlocks.key("s", id), null, BLOCK, (int) id);
    }

    @Test
    void aFillerThatFailsGivesItsSlotBack() {
        SlotTable table = new SlotTable(TierId.DRAM, 4L * BLOCK, BLOCK);
        assertThatThrownBy(() -> table.place(record(1), offset -> {
                    throw new IOException("copy failed");
                }))
                .isInstanceOf(IOException.class);
        assertThat(table.usedBytes()).isZero();
        assertThat(table.contains(record(1).key())).isFalse();
        assertThatThrownBy(() -> table.require(record(1).key())).isInstanceOf(BlockNotFoundException.class);
    }

    @Test
    void aBlockAlreadyHeldIsNotFilledAgain() throws Exception {
        SlotTable table = new SlotTable(TierId.DRAM, 4L * BLOCK, BLOCK);
        AtomicInteger fills = new AtomicInteger();
        table.place(record(1), offset -> fills.incrementAndGet());
        table.place(record(1), offset -> fills.incrementAndGet());
        assertThat(fills).hasValue(1);
        assertThat(table.blockCount()).isEqualTo(1);
        assertThat(table.usedBytes()).isEqualTo(SlabAllocator.slotSizeFor(BLOCK));
    }

    @Test
    void aFullTableNamesTheTierAndFreedSlotsAreReused() throws Exception {
        SlotTable table = new SlotTable(TierId.HBM, 2L * BLOCK, BLOCK);
        table.place(record(1), offset -> {});
        table.place(record(2), offset -> {});
        assertThatThrownBy(() -> table.place(record(3), offset -> {}))
                .isInstanceOf(TierFullException.class)
                .hasMessageContaining("tier HBM");
        long freed = table.offsetOf(record(1).key());
        assertThat(table.remove(record(1).key())).isTrue();
        assertThat(table.remove(record(1).key())).isFalse();
        table.place(record(3), offset -> assertThat(offset).isEqualTo(freed));
        assertThat(table.offsetOf(record(3).key())).isEqualTo(freed);
    }

    @Test
    void racingPlacementsOfOneBlockKeepOneSlot() throws Exception {
        SlotTable table = new SlotTable(TierId.DRAM, 64L * BLOCK, BLOCK);
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                    table.place(record(7), offset -> Thread.yield());
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        assertThat(table.blockCount()).isEqualTo(1);
        assertThat(table.usedBytes()).isEqualTo(SlabAllocator.slotSizeFor(BLOCK));
    }
}
