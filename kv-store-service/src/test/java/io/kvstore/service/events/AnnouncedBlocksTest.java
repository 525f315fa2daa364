package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The re-announcement's record of what went out agrees with a map and costs at most 24 bytes a block. */
class AnnouncedBlocksTest {

    @Test
    void flagsAgreeWithAMapAndAMillionBlocksTakeAtMost24BytesEach() {
        long seed = System.nanoTime();
        System.out.println("AnnouncedBlocksTest seed " + seed);
        SplittableRandom random = new SplittableRandom(seed);
        AnnouncedBlocks blocks = new AnnouncedBlocks();
        Map<String, Integer> reference = new HashMap<>();
        for (int i = 0; i < 1_000_000; i++) {
            String namespace = i % 7 == 0 ? "b" : "a";
            long hash = i == 3 ? 0 : random.nextLong(); // the empty slot's key is a hash too
            int flag = 1 << random.nextInt(3);
            blocks.mark(namespace, hash, flag);
            reference.merge(namespace + "/" + hash, flag, (x, y) -> x | y);
        }
        reference.forEach((k, v) -> {
            int slash = k.indexOf('/');
            assertThat(blocks.flags(k.substring(0, slash), Long.parseLong(k.substring(slash + 1))))
                    .as(k)
                    .isEqualTo(v);
        });
        assertThat(blocks.flags("a", 42)).isZero();
        assertThat(blocks.flags("c", 0)).isZero();
        assertThat(blocks.size()).isEqualTo(reference.size());
        assertThat(blocks.bytes()).as("bytes for a million blocks").isLessThanOrEqualTo(24L * 1_000_000);
        blocks.clear();
        assertThat(blocks.bytes()).isZero();
    }

    @Test
    void aDeletedNamespacesBlocksAreForgottenAndNoOtherNamespaces() {
        AnnouncedBlocks blocks = new AnnouncedBlocks();
        blocks.mark("a", 7, AnnouncedBlocks.KNOWN);
        blocks.mark("b", 7, AnnouncedBlocks.KNOWN | AnnouncedBlocks.REANNOUNCED);
        blocks.forget("a");
        assertThat(blocks.flags("a", 7)).isZero();
        assertThat(blocks.flags("b", 7)).isEqualTo(AnnouncedBlocks.KNOWN | AnnouncedBlocks.REANNOUNCED);

        WaitingStores waiting = new WaitingStores(16);
        waiting.add("a", 1, io.kvstore.block.TierId.HBM, 2);
        waiting.add("b", 1, io.kvstore.block.TierId.HBM, 2);
        waiting.forget("a");
        assertThat(waiting.release("a", 1))
                .as("the deleted namespace's waiting store")
                .isNull();
        assertThat(waiting.release("b", 1))
                .as("the other namespace's")
                .containsExactly(new WaitingStores.Waiting(io.kvstore.block.TierId.HBM, 2));
        assertThat(waiting.size()).isZero();
    }
}
