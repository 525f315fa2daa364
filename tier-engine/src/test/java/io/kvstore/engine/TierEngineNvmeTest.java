package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.NvmeTier;
import io.kvstore.tier.nvme.NvmeTierConfig;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** DRAM over NVMe: blocks demote to disk past the watermark and are found again after a restart. */
class TierEngineNvmeTest {

    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    private TierEngine open() throws Exception {
        return open(EngineEvents.NONE);
    }

    private TierEngine open(EngineEvents events) throws Exception {
        List<BlockTier> tiers = List.of(
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 16L * BLOCK, 4L * BLOCK),
                new NvmeTier(new NvmeTierConfig(List.of(dir), 16 << 20, 4 << 20, 1 << 20, 4)));
        return new TierEngine(
                tiers,
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, false)),
                Duration.ofMinutes(2),
                events,
                Clock.systemUTC());
    }

    /**
     * A restart announces each block found on NVMe (KV events to routers, which drop a stored block whose
     * parent they do not know yet): in the NVMe index's order, by hash, a chain's child came before its
     * parent as often as not.
     */
    @Test
    void aRestartAnnouncesTheBlocksFoundOnNvmeParentFirst() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            try (TierEngine engine = open()) {
                engine.setWriteThrough("model", true); // every block on NVMe when its put returns
                BlockHash parent = null;
                for (long id = 1; id <= 32; id++) {
                    // hashes as vLLM's are: a chain's order is not theirs
                    BlockKey key = new BlockKey("model", BlockHash.ofLong(0x9E3779B97F4A7C15L * id));
                    engine.put(key, parent, TestBlocks.bytes(arena, id, BLOCK));
                    parent = key.hash();
                }
            }
            List<BlockKey> announced = new ArrayList<>();
            List<BlockKey> beforeParent = new ArrayList<>();
            EngineEvents events = new EngineEvents() {
                @Override
                public void copyAdded(TierId tier, io.kvstore.block.BlockRecord block) {
                    if (block.parent() != null
                            && !announced.contains(new BlockKey(block.key().namespace(), block.parent()))) {
                        beforeParent.add(block.key());
                    }
                    announced.add(block.key());
                }
            };
            try (TierEngine engine = open(events)) {
                assertThat(announced).hasSize(32);
                assertThat(beforeParent).as("announced before their parent").isEmpty();
            }
        }
    }

    @Test
    void blocksDemotedToNvmeAreFoundAfterARestart() throws Exception {
        List<BlockKey> keys = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            try (TierEngine engine = open()) {
                BlockHash parent = null;
                for (long id = 1; id <= 64; id++) {
                    BlockKey key = TestBlocks.key("model", id);
                    engine.put(key, parent, TestBlocks.bytes(arena, id, BLOCK));
                    keys.add(key);
                    parent = key.hash();
                }
                engine.awaitMoves();
                var dram = engine.tier(TierId.DRAM);
                assertThat(dram.usedBytes()).isLessThanOrEqualTo((long) (0.75 * dram.capacityBytes()));
                assertThat(engine.tier(TierId.NVME).blockCount()).isGreaterThanOrEqualTo(52);
                // background demotion writes its victims in batches: fewer group commits than blocks
                long commits = ((NvmeTier) engine.tier(TierId.NVME)).groupCommits();
                System.out.printf(
                        "demoted %d blocks to NVMe in %d group commits%n",
                        engine.tier(TierId.NVME).blockCount(), commits);
                assertThat(commits).isLessThan(engine.tier(TierId.NVME).blockCount());
                assertThat(engine.lookup(
                                        "model",
                                        keys.stream().map(BlockKey::hash).toList())
                                .matchedBlocks())
                        .isEqualTo(64);
            }
            try (TierEngine engine = open()) {
                var result =
                        engine.lookup("model", keys.stream().map(BlockKey::hash).toList());
                // DRAM is volatile: the chain is found up to the first block that lived only in DRAM
                assertThat(result.matchedBlocks()).isGreaterThanOrEqualTo(52);
                assertThat(result.tiers()).containsOnly(TierId.NVME);
                MemorySegment dst = arena.allocate(BLOCK);
                for (int i = 0; i < result.matchedBlocks(); i++) {
                    engine.get(keys.get(i), dst);
                    assertThat(dst.mismatch(TestBlocks.bytes(arena, i + 1, BLOCK)))
                            .as("block %d", i + 1)
                            .isEqualTo(-1);
                }
                assertThat(engine.info(keys.get(1)).parent())
                        .isEqualTo(keys.get(0).hash());
            }
        }
    }

    @Test
    void writeThroughNamespaceIsOnNvmeWhenThePutReturns() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            try (TierEngine engine = open()) {
                engine.setWriteThrough("durable", true);
                engine.put(TestBlocks.key("durable", 1), null, TestBlocks.bytes(arena, 1, BLOCK));
                engine.put(TestBlocks.key("volatile", 1), null, TestBlocks.bytes(arena, 1, BLOCK));
                assertThat(engine.info(TestBlocks.key("durable", 1)).tiers()).containsExactly(TierId.DRAM, TierId.NVME);
                assertThat(engine.info(TestBlocks.key("volatile", 1)).tiers()).containsExactly(TierId.DRAM);
            }
            try (TierEngine engine = open()) {
                MemorySegment dst = arena.allocate(BLOCK);
                engine.get(TestBlocks.key("durable", 1), dst);
                assertThat(dst.mismatch(TestBlocks.bytes(arena, 1, BLOCK))).isEqualTo(-1);
                assertThat(engine.info(TestBlocks.key("volatile", 1))).isNull();
            }
        }
    }
    /**
     * Stores {@code key} in a write-through namespace while NVMe is full of pinned blocks, so its write-through
     * fails and the put with it; then makes room again. The block is left in DRAM only.
     */
    private static void failWriteThrough(TierEngine engine, Arena arena, BlockKey key) throws Exception {
        engine.setWriteThrough(key.namespace(), true);
        List<BlockKey> filler = new ArrayList<>();
        try {
            for (long id = 1; id <= 1000; id++) {
                BlockKey k = TestBlocks.key("filler", id);
                engine.put(k, null, TestBlocks.bytes(arena, id, BLOCK), TierId.NVME);
                engine.pin(List.of(k));
                filler.add(k);
            }
        } catch (TierFullException full) {
            // the NVMe tier is full
        }
        assertThat(filler).isNotEmpty();
        assertThatThrownBy(() -> engine.put(key, null, TestBlocks.bytes(arena, 1, BLOCK)))
                .isInstanceOf(TierFullException.class);
        engine.unpin(filler);
    }

    private void assertDurable(Arena arena, BlockKey key) throws Exception {
        try (TierEngine engine = open()) {
            MemorySegment dst = arena.allocate(BLOCK);
            engine.get(key, dst);
            assertThat(dst.mismatch(TestBlocks.bytes(arena, 1, BLOCK))).isEqualTo(-1);
        }
    }

    @Test
    void aPutRetriedAfterItsWriteThroughFailedIsOnNvmeWhenItReturns() throws Exception {
        BlockKey key = TestBlocks.key("durable", 1);
        try (Arena arena = Arena.ofShared()) {
            try (TierEngine engine = open()) {
                failWriteThrough(engine, arena, key);
                // the client retries; a put that returns must have written the block through
                engine.put(key, null, TestBlocks.bytes(arena, 1, BLOCK));
                assertThat(engine.info(key).tiers()).contains(TierId.NVME);
            }
            assertDurable(arena, key);
        }
    }

    @Test
    void aReservationThatFindsABlockWhoseWriteThroughFailedWritesItThrough() throws Exception {
        BlockKey key = TestBlocks.key("durable", 1);
        try (Arena arena = Arena.ofShared()) {
            try (TierEngine engine = open()) {
                failWriteThrough(engine, arena, key);
                // a one-sided writer retries: the block is reported as already stored, so it must be durable
                Reservation r = engine.reserve(List.of(new InPlaceBlock(key, null, BLOCK)), TierId.DRAM, null);
                assertThat(r.alreadyStored()).containsExactly(key);
                engine.cancel(r.id());
                assertThat(engine.info(key).tiers()).contains(TierId.NVME);
            }
            assertDurable(arena, key);
        }
    }
}
