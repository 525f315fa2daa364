package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.memory.SlotTable;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A commit that races a delete and a store of the same block, with the interleaving forced: the commit's
 * slot is adopted, a delete removes the entry before the commit publishes it, and another client stores
 * the same block before the commit looks again.
 */
class CommitRaceTest {

    private static final int BLOCK = 16 * 1024;

    private final Arena arena = Arena.ofShared();
    private MemoryTier dram;
    private TierEngine engine;

    /** A clock that parks one chosen thread the next time it asks for the time. */
    private static final class GateClock extends Clock {
        volatile Thread gated;
        final CountDownLatch reached = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);

        @Override
        public long millis() {
            if (Thread.currentThread() == gated) {
                gated = null;
                reached.countDown();
                try {
                    open.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return System.currentTimeMillis();
        }

        @Override
        public Instant instant() {
            return Instant.now();
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }
    }

    @AfterEach
    void close() {
        if (engine != null) {
            engine.close();
        }
        arena.close();
    }

    @SuppressWarnings("unchecked")
    private static ConcurrentHashMap<BlockKey, SlotTable.Slot> slotMap(MemoryTier tier) throws Exception {
        var slotsField = MemoryTier.class.getDeclaredField("slots");
        slotsField.setAccessible(true);
        var blocksField = SlotTable.class.getDeclaredField("blocks");
        blocksField.setAccessible(true);
        return (ConcurrentHashMap<BlockKey, SlotTable.Slot>) blocksField.get(slotsField.get(tier));
    }

    @Test
    void aCommitThatLosesItsBlockToADeleteAndThenFindsItStoredAgainFreesNoSlotItNoLongerOwns() throws Exception {
        GateClock clock = new GateClock();
        dram = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 4L * BLOCK, BLOCK);
        engine = new TierEngine(
                List.of(dram),
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)),
                Duration.ofSeconds(30),
                EngineEvents.NONE,
                clock);
        BlockKey key = TestBlocks.key("ns", 7);
        MemorySegment bytes = TestBlocks.bytes(arena, 7, BLOCK);
        int crc = Checksums.crc32c(bytes);

        Reservation r = engine.reserve(List.of(new InPlaceBlock(key, null, BLOCK)), TierId.DRAM, null);
        MemorySegment.copy(bytes, 0, dram.region(), r.slots().getFirst().offset(), BLOCK);

        // hold the tier's map bin of the key, so the commit stops inside its write, after claiming the entry
        // and before publishing its slot (as if its thread were descheduled there)
        ConcurrentHashMap<BlockKey, SlotTable.Slot> map = slotMap(dram);
        CountDownLatch binHeld = new CountDownLatch(1);
        CountDownLatch releaseBin = new CountDownLatch(1);
        Thread binHolder = Thread.ofPlatform()
                .start(() -> map.compute(key, (k, v) -> {
                    binHeld.countDown();
                    try {
                        releaseBin.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return v;
                }));
        assertThat(binHeld.await(10, TimeUnit.SECONDS)).isTrue();

        CompletableFuture<CommitReport> commit = new CompletableFuture<>();
        Thread committer = Thread.ofPlatform().start(() -> {
            try {
                commit.complete(engine.commit(r.id(), Map.of(key, crc)));
            } catch (Throwable e) {
                commit.completeExceptionally(e);
            }
        });
        RaceFixtures.awaitStopped(committer, Set.of(Thread.State.BLOCKED, Thread.State.WAITING));

        // a client deletes the block the commit is storing, and the commit's next look at the catalog is held
        engine.delete(key);
        clock.gated = committer;
        releaseBin.countDown();
        binHolder.join();
        assertThat(clock.reached.await(10, TimeUnit.SECONDS)).isTrue();

        // meanwhile another client stores the same block (same bytes)
        engine.put(key, null, bytes);
        clock.open.countDown();
        commit.get(10, TimeUnit.SECONDS);

        // the stored block keeps its slot: the tier's accounting matches what it holds, and a new block
        // does not land in the slot of the stored one
        assertThat(dram.usedBytes()).isEqualTo((long) dram.blockCount() * BLOCK);
        engine.put(TestBlocks.key("ns", 8), null, TestBlocks.bytes(arena, 8, BLOCK));
        MemorySegment out = arena.allocate(BLOCK);
        engine.get(key, out);
        assertThat(out.mismatch(bytes)).isEqualTo(-1);
    }
}
