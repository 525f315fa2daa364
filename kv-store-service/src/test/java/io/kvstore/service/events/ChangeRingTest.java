package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class ChangeRingTest {

    private record Change(TierId tier, String namespace, long hash, boolean hasParent, long parent, boolean stored) {}

    private static List<Change> drainAll(ChangeRing ring) {
        return drain(ring, Integer.MAX_VALUE);
    }

    private static List<Change> drain(ChangeRing ring, int max) {
        List<Change> out = new ArrayList<>();
        ring.drain(
                (tier, ns, hash, hasParent, parent, stored) ->
                        out.add(new Change(tier, ns, hash, hasParent, parent, stored)),
                max);
        return out;
    }

    @Test
    void changesComeOutInOrderWithEveryField() {
        ChangeRing ring = new ChangeRing(8);
        BlockHash parent = BlockHash.ofLong(-7);
        assertThat(ring.offer(TierId.DRAM, new BlockKey("a", BlockHash.ofLong(1)), parent, true))
                .isTrue();
        assertThat(ring.offer(TierId.NVME, new BlockKey("b", BlockHash.ofLong(-2)), null, true))
                .isTrue();
        assertThat(ring.offer(TierId.HBM, new BlockKey("a", BlockHash.ofLong(Long.MAX_VALUE)), null, false))
                .isTrue();

        assertThat(drainAll(ring))
                .containsExactly(
                        new Change(TierId.DRAM, "a", 1, true, -7, true),
                        new Change(TierId.NVME, "b", -2, false, 0, true),
                        new Change(TierId.HBM, "a", Long.MAX_VALUE, false, 0, false));
        assertThat(ring.isEmpty()).isTrue();
        assertThat(drainAll(ring)).isEmpty();
    }

    @Test
    void aFullRingRefusesUntilDrainedAndKeepsOrderOverManyLaps() {
        ChangeRing ring = new ChangeRing(5); // 8 slots, 5 waiting at most
        long next = 0;
        long expected = 0;
        for (int lap = 0; lap < 1000; lap++) {
            while (ring.offer(TierId.DRAM, new BlockKey("ns", BlockHash.ofLong(next)), null, true)) {
                next++;
            }
            assertThat(ring.size()).isEqualTo(5);
            int take = 1 + lap % 5; // drain partly, so the head falls at every offset of the slots
            List<Change> out = drain(ring, take);
            assertThat(out).hasSize(take);
            for (Change c : out) {
                assertThat(c.hash()).isEqualTo(expected++);
            }
        }
        List<Change> rest = drainAll(ring);
        assertThat(rest).hasSize((int) (next - expected));
        for (Change c : rest) {
            assertThat(c.hash()).isEqualTo(expected++);
        }
    }

    @Test
    void aCapacityBeyondOneArrayIsRefused() {
        assertThatThrownBy(() -> new ChangeRing((1 << 28) + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("2^28");
        assertThatThrownBy(() -> new ChangeRing(0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aRingThatHasNumberedAllItMayRefusesANewNamespaceAndStillTakesKnownOnes() {
        ChangeRing ring = new ChangeRing(16, 2);
        assertThat(ring.offer(TierId.DRAM, new BlockKey("a", BlockHash.ofLong(1)), null, true))
                .isTrue();
        assertThat(ring.offer(TierId.DRAM, new BlockKey("b", BlockHash.ofLong(2)), null, true))
                .isTrue();
        assertThat(ring.offer(TierId.DRAM, new BlockKey("c", BlockHash.ofLong(3)), null, true))
                .isFalse();
        assertThat(ring.offer(TierId.DRAM, new BlockKey("a", BlockHash.ofLong(4)), null, false))
                .isTrue();
        assertThat(drainAll(ring))
                .extracting(Change::namespace, Change::hash)
                .containsExactly(tuple("a", 1L), tuple("b", 2L), tuple("a", 4L));
    }

    @Test
    void namespacesBeyondTheFirstTableResolve() {
        ChangeRing ring = new ChangeRing(1024);
        for (int i = 0; i < 300; i++) {
            assertThat(ring.offer(TierId.DRAM, new BlockKey("tenant-" + i % 100, BlockHash.ofLong(i)), null, true))
                    .isTrue();
        }
        List<Change> out = drainAll(ring);
        assertThat(out).hasSize(300);
        for (int i = 0; i < 300; i++) {
            assertThat(out.get(i).namespace()).isEqualTo("tenant-" + i % 100);
            assertThat(out.get(i).hash()).isEqualTo(i);
        }
    }

    @Test
    void manyProducersLoseNothingAndEachProducersChangesStayInOrder() throws Exception {
        int producers = 4;
        int each = 200_000;
        ChangeRing ring = new ChangeRing(4096);
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            String ns = "producer-" + p;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (long i = 0; i < each; i++) {
                    BlockKey key = new BlockKey(ns, BlockHash.ofLong(i));
                    while (!ring.offer(TierId.DRAM, key, BlockHash.ofLong(i - 1), true)) {
                        Thread.onSpinWait(); // full: the consumer below frees slots
                    }
                }
            }));
        }
        long[] nextOf = new long[producers];
        AtomicBoolean wrong = new AtomicBoolean();
        start.countDown();
        long seen = 0;
        while (seen < (long) producers * each) {
            seen += ring.drain(
                    (tier, ns, hash, hasParent, parent, stored) -> {
                        int p = Integer.parseInt(ns.substring("producer-".length()));
                        if (hash != nextOf[p]++ || parent != hash - 1 || !hasParent || !stored) {
                            wrong.set(true);
                        }
                    },
                    1000);
        }
        for (Thread t : threads) {
            t.join();
        }
        assertThat(wrong).isFalse();
        assertThat(nextOf).containsOnly(each);
        assertThat(ring.isEmpty()).isTrue();
    }
}
