package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.TierId;
import org.junit.jupiter.api.Test;

/** The live stores a re-announcement holds back are bounded: past the capacity a store is refused, not kept. */
class WaitingStoresTest {

    @Test
    void aStorePastTheCapacityIsRefusedAndWhatLeavesMakesRoom() {
        WaitingStores waiting = new WaitingStores(4);
        for (long child = 1; child <= 4; child++) {
            assertThat(waiting.add("a", 100 + child % 2, TierId.DRAM, child))
                    .as("store %d", child)
                    .isTrue();
        }
        assertThat(waiting.add("a", 100, TierId.HBM, 5)).as("the fifth").isFalse();
        assertThat(waiting.size()).isEqualTo(4);

        waiting.cancel("a", 1, TierId.DRAM); // its removal went out
        assertThat(waiting.size()).isEqualTo(3);
        assertThat(waiting.add("a", 101, TierId.HBM, 5)).as("after a cancel").isTrue();

        assertThat(waiting.release("a", 100)).as("waiting for 100").hasSize(2); // 2 and 4; 1 was cancelled
        assertThat(waiting.release("a", 101)).as("waiting for 101").hasSize(2); // 3 and 5
        assertThat(waiting.size()).isZero();
        assertThat(waiting.isEmpty()).isTrue();

        assertThat(waiting.add("b", 7, TierId.DRAM, 8)).isTrue();
        waiting.forget("b");
        assertThat(waiting.size()).isZero();
    }
}
