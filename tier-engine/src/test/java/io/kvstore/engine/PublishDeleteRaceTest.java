package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.memory.EmulatedDeviceMemoryProvider;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A delete that lands between the publication of a new copy (by a store, or by a demotion) and the moment the
 * tier's policy hears of that copy: the policy must not go on tracking a block the tier no longer holds.
 */
class PublishDeleteRaceTest {

    private static final int BLOCK = 16 * 1024;

    private final Arena arena = Arena.ofShared();
    private final AtomicReference<@Nullable String> publishedCopy = new AtomicReference<>();
    private final AtomicReference<@Nullable Runnable> onPublished = new AtomicReference<>();
    private @Nullable TierEngine engine;

    /**
     * Runs {@code hook} inside the publication of the copy of {@code key} in {@code tier}: after the copy became
     * visible and before the tier's policy is told, so what the hook does lands exactly in that window.
     */
    private void whenPublished(TierId tier, BlockKey key, Runnable hook) {
        publishedCopy.set(tier + " " + key);
        onPublished.set(hook);
    }

    /** HBM of 4 blocks over DRAM of 16, neither demoting by itself. */
    private TierEngine engine(EvictionPolicyKind hbm, EvictionPolicyKind dram) {
        EngineEvents events = new EngineEvents() {
            @Override
            public void copyAdded(TierId tier, BlockRecord block) {
                if ((tier + " " + block.key()).equals(publishedCopy.get())) {
                    Runnable hook = onPublished.getAndSet(null);
                    if (hook != null) {
                        hook.run();
                    }
                }
            }
        };
        TierEngine e = new TierEngine(
                List.of(
                        new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 4L * BLOCK, BLOCK),
                        new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 16L * BLOCK, BLOCK)),
                Map.of(
                        TierId.HBM, new TierSettings(hbm, 1.0, 0.5, false),
                        TierId.DRAM, new TierSettings(dram, 1.0, 0.5, false)),
                Duration.ofMinutes(2),
                events,
                Clock.systemUTC());
        engine = e;
        return e;
    }

    @AfterEach
    void close() {
        if (engine != null) {
            engine.close();
        }
        arena.close();
    }

    @Test
    void aBlockDeletedAsItIsStoredDoesNotKeepItsPrefixInTheTierForGood() throws Exception {
        TierEngine e = engine(EvictionPolicyKind.PREFIX_AWARE, EvictionPolicyKind.LRU);
        BlockKey prefix = TestBlocks.key("m", 1);
        BlockKey suffix = TestBlocks.key("m", 2);
        e.put(prefix, null, TestBlocks.bytes(arena, 1, BLOCK));
        whenPublished(TierId.HBM, suffix, () -> assertThat(e.delete(suffix)).isTrue());
        e.put(suffix, prefix.hash(), TestBlocks.bytes(arena, 2, BLOCK));
        assertThat(e.info(suffix)).as("the suffix was deleted").isNull();
        // the suffix comes back, but in DRAM only: HBM holds the prefix and no child of it
        e.put(suffix, prefix.hash(), TestBlocks.bytes(arena, 2, BLOCK), TierId.DRAM);

        e.evict(TierId.HBM, 0, 1);

        assertThat(Objects.requireNonNull(e.info(prefix)).fastestTier())
                .as("the prefix, HBM's only leaf, was moved down")
                .isEqualTo(TierId.DRAM);
    }

    @Test
    void aBlockDeletedAsItIsDemotedDoesNotKeepItsPrefixInTheTierBelowForGood() throws Exception {
        TierEngine e = engine(EvictionPolicyKind.LRU, EvictionPolicyKind.PREFIX_AWARE);
        BlockKey prefix = TestBlocks.key("m", 1);
        BlockKey suffix = TestBlocks.key("m", 2);
        e.put(prefix, null, TestBlocks.bytes(arena, 1, BLOCK));
        e.put(suffix, prefix.hash(), TestBlocks.bytes(arena, 2, BLOCK));
        whenPublished(TierId.DRAM, suffix, () -> assertThat(e.delete(suffix)).isTrue());
        e.evict(TierId.HBM, 0, 2); // both move down; the suffix is deleted as its DRAM copy is recorded
        assertThat(e.info(suffix)).as("the suffix was deleted").isNull();
        // the suffix comes back, but in HBM only: DRAM holds the prefix and no child of it
        e.put(suffix, prefix.hash(), TestBlocks.bytes(arena, 2, BLOCK));

        e.evict(TierId.DRAM, 0, 1);

        assertThat(e.info(prefix))
                .as("the prefix, DRAM's only leaf, was dropped")
                .isNull();
    }
}
