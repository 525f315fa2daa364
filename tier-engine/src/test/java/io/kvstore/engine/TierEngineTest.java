package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.catalog.LookupResult;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.EmulatedDeviceMemoryProvider;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class TierEngineTest {

    private static final int BLOCK = 16 * 1024;

    private final Arena arena = Arena.ofShared();
    private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
    private final EngineEvents events = new EngineEvents() {
        @Override
        public void evicted(TierId tier, EvictionPolicyKind policy, int bytes) {
            count("evicted." + tier + "." + policy);
        }

        @Override
        public void demoted(TierId from, TierId to, int bytes) {
            count("demoted." + from + "." + to);
        }

        @Override
        public void promoted(TierId from, TierId to, int bytes) {
            count("promoted." + from + "." + to);
        }

        @Override
        public void checksumFailed(TierId tier, BlockKey key) {
            count("checksum." + tier);
        }
    };
    private TierEngine engine;

    private void count(String name) {
        counts.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
    }

    private int counted(String name) {
        AtomicInteger n = counts.get(name);
        return n == null ? 0 : n.get();
    }

    /**
     * HBM (emulated) of {@code hbmBlocks} and DRAM of {@code dramBlocks} blocks. Tiers without settings
     * get a high watermark of 1.0 (no background demotion), so tests decide exactly what moves.
     */
    private TierEngine engine(int hbmBlocks, int dramBlocks, Map<TierId, TierSettings> given) {
        Map<TierId, TierSettings> settings = new java.util.EnumMap<>(TierId.class);
        settings.put(TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false));
        settings.put(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false));
        settings.putAll(given);
        List<MemoryTier> tiers = new ArrayList<>();
        if (hbmBlocks > 0) {
            tiers.add(new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), (long) hbmBlocks * BLOCK, BLOCK));
        }
        tiers.add(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), (long) dramBlocks * BLOCK, BLOCK));
        engine = new TierEngine(tiers, settings, Duration.ofMillis(300), events, Clock.systemUTC());
        return engine;
    }

    @AfterEach
    void close() {
        if (engine != null) {
            engine.close();
        }
        arena.close();
    }

    private List<BlockKey> storeChain(String ns, long first, int n) throws Exception {
        List<BlockKey> keys = new ArrayList<>();
        BlockHash parent = null;
        for (long id = first; id < first + n; id++) {
            BlockKey key = TestBlocks.key(ns, id);
            engine.put(key, parent, TestBlocks.bytes(arena, id, BLOCK));
            keys.add(key);
            parent = key.hash();
        }
        return keys;
    }

    private void assertReadsBack(BlockKey key, long id) throws Exception {
        MemorySegment dst = arena.allocate(BLOCK);
        engine.get(key, dst);
        assertThat(dst.mismatch(TestBlocks.bytes(arena, id, BLOCK))).isEqualTo(-1);
    }

    private static List<BlockHash> hashes(List<BlockKey> keys) {
        return keys.stream().map(BlockKey::hash).toList();
    }

    @Test
    void storedBlocksAreFoundAndReadBackExactly() throws Exception {
        engine(0, 16, Map.of());
        List<BlockKey> keys = storeChain("m", 1, 5);
        LookupResult result = engine.lookup("m", hashes(keys));
        assertThat(result.matchedBlocks()).isEqualTo(5);
        assertThat(result.tiers()).containsOnly(TierId.DRAM);
        for (int i = 0; i < 5; i++) {
            assertReadsBack(keys.get(i), i + 1);
        }
    }

    @Test
    void lookupStopsAtFirstMissingBlock() throws Exception {
        engine(0, 16, Map.of());
        List<BlockKey> keys = storeChain("m", 1, 5);
        engine.delete(keys.get(2));
        assertThat(engine.lookup("m", hashes(keys)).matchedBlocks()).isEqualTo(2);
    }

    @Test
    void fullHbmDemotesToDramPastHighWatermark() throws Exception {
        engine(8, 64, Map.of(TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, false)));
        List<BlockKey> keys = storeChain("m", 1, 20);
        engine.awaitMoves();
        var hbm = engine.tier(TierId.HBM);
        assertThat(hbm.usedBytes()).isLessThanOrEqualTo((long) (0.75 * hbm.capacityBytes()));
        assertThat(engine.lookup("m", hashes(keys)).matchedBlocks()).isEqualTo(20);
        assertThat(counted("demoted.HBM.DRAM")).isGreaterThanOrEqualTo(12);
        // the oldest blocks went down first (LRU)
        assertThat(engine.info(keys.get(0)).fastestTier()).isEqualTo(TierId.DRAM);
        assertThat(engine.info(keys.get(19)).fastestTier()).isEqualTo(TierId.HBM);
        for (int i = 0; i < 20; i++) {
            assertReadsBack(keys.get(i), i + 1);
        }
    }

    @Test
    void lastTierDropsBlocksWhenFull() throws Exception {
        engine(0, 4, Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)));
        List<BlockKey> keys = storeChain("m", 1, 10);
        engine.awaitMoves();
        assertThat(engine.tier(TierId.DRAM).blockCount()).isLessThanOrEqualTo(4);
        assertThat(engine.blockCount()).isLessThanOrEqualTo(4);
        assertThat(engine.lookup("m", hashes(keys.subList(6, 10))).matchedBlocks())
                .isEqualTo(4);
        assertThat(counted("evicted.DRAM.LRU")).isGreaterThanOrEqualTo(6);
    }

    @Test
    void pinnedBlockIsNeverEvicted() throws Exception {
        engine(0, 4, Map.of());
        List<BlockKey> keys = storeChain("m", 1, 2);
        assertThat(engine.pin(keys)).isEqualTo(2);
        storeChain("x", 100, 30);
        engine.awaitMoves();
        assertThat(engine.lookup("m", hashes(keys)).matchedBlocks()).isEqualTo(2);
        assertReadsBack(keys.get(0), 1);
        engine.unpin(keys);
        storeChain("y", 200, 30);
        engine.awaitMoves();
        assertThat(engine.lookup("m", hashes(keys)).matchedBlocks()).isZero();
    }

    @Test
    void everythingPinnedMeansTierFull() throws Exception {
        engine(0, 2, Map.of());
        engine.pin(storeChain("m", 1, 2));
        assertThatThrownBy(() -> storeChain("m", 10, 1)).isInstanceOf(TierFullException.class);
        assertThat(engine.blockCount()).isEqualTo(2);
    }

    @Test
    void leasedBlocksStayUntilTheLeaseExpires() throws Exception {
        engine(0, 4, Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false)));
        List<BlockKey> keys = storeChain("m", 1, 4);
        Lease lease = engine.lease(keys, Duration.ofMillis(200));
        assertThat(lease.blocks()).hasSize(4);
        assertThat(engine.activeLeases()).isEqualTo(1);
        assertThatThrownBy(() -> storeChain("x", 100, 3)).isInstanceOf(TierFullException.class);
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (engine.activeLeases() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(engine.activeLeases()).isZero();
        storeChain("x", 100, 3);
        assertThat(engine.release(lease.id())).isFalse();
    }

    @Test
    void leaseCoversOnlyTheResidentPrefix() throws Exception {
        engine(0, 8, Map.of());
        List<BlockKey> keys = new ArrayList<>(storeChain("m", 1, 3));
        keys.add(1, TestBlocks.key("m", 999));
        Lease lease = engine.lease(keys, null);
        assertThat(lease.blocks()).containsExactly(keys.get(0));
        assertThat(engine.release(lease.id())).isTrue();
    }

    @Test
    void aLeaseReleasedAfterItsCopyWasDroppedDoesNotReleaseALeaseOnTheBlockStoredAgain() throws Exception {
        engine(0, 16, Map.of());
        BlockKey x = TestBlocks.key("m", 1);
        MemorySegment bytes = TestBlocks.bytes(arena, 1, BLOCK);
        engine.put(x, null, bytes);
        Lease first = engine.lease(List.of(x), null); // a client copying X out
        // X is damaged in place and a read drops that copy, lease or not
        MemoryTier dram = (MemoryTier) engine.tier(TierId.DRAM);
        long at = dram.offsetOf(x);
        dram.region().set(ValueLayout.JAVA_BYTE, at, (byte) ~dram.region().get(ValueLayout.JAVA_BYTE, at));
        assertThatThrownBy(() -> engine.get(x, arena.allocate(BLOCK)))
                .isInstanceOf(io.kvstore.tier.ChecksumMismatchException.class);
        engine.put(x, null, bytes); // stored again
        Lease second = engine.lease(List.of(x), null); // another client copies the new copy out
        engine.release(first.id());
        assertThat(engine.info(x).leases()).as("the second lease still holds X").isEqualTo(1);
        assertThatThrownBy(() -> engine.delete(x)).isInstanceOf(BlockHeldException.class);
        assertThat(engine.release(second.id())).isTrue();
        assertThat(engine.delete(x)).isTrue();
    }

    @Test
    void corruptCopyIsDroppedAndTheSlowerCopyServed() throws Exception {
        engine(4, 16, Map.of());
        List<BlockKey> keys = storeChain("m", 1, 8);
        engine.awaitMoves();
        // block 8 is in HBM only; force a copy into DRAM by evicting everything from HBM, then promote nothing
        BlockKey key = keys.get(7);
        engine.evict(TierId.HBM, 0, 100);
        assertThat(engine.info(key).tiers()).containsExactly(TierId.DRAM);
        MemoryTier dram = (MemoryTier) engine.tier(TierId.DRAM);
        long offset = dram.offsetOf(key);
        dram.region().set(ValueLayout.JAVA_BYTE, offset, (byte)
                (dram.region().get(ValueLayout.JAVA_BYTE, offset) ^ 0x40));
        assertThatThrownBy(() -> engine.get(key, arena.allocate(BLOCK)))
                .isInstanceOf(io.kvstore.tier.ChecksumMismatchException.class);
        assertThat(counted("checksum.DRAM")).isEqualTo(1);
        assertThat(engine.lookup("m", hashes(keys)).matchedBlocks()).isEqualTo(7);
        assertThatThrownBy(() -> engine.get(key, arena.allocate(BLOCK))).isInstanceOf(BlockNotFoundException.class);
    }

    @Test
    void switchingPolicyAtRunTimeKeepsEveryBlock() throws Exception {
        engine(0, 32, Map.of());
        List<BlockKey> keys = storeChain("m", 1, 20);
        for (EvictionPolicyKind kind : EvictionPolicyKind.values()) {
            engine.setPolicy(TierId.DRAM, kind);
            assertThat(engine.settings(TierId.DRAM).policy()).isEqualTo(kind);
            assertThat(engine.lookup("m", hashes(keys)).matchedBlocks()).isEqualTo(20);
        }
    }

    @Test
    void prefixAwareEvictsChainTailsFirst() throws Exception {
        engine(0, 8, Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.PREFIX_AWARE, 1.0, 0.5, false)));
        List<BlockKey> a = storeChain("m", 1, 4);
        List<BlockKey> b = storeChain("m", 100, 4);
        engine.lookup("m", hashes(a));
        engine.evict(TierId.DRAM, 0, 3);
        // prefixes survive: the lookup of each chain still matches from its start
        assertThat(engine.lookup("m", hashes(b)).matchedBlocks()).isEqualTo(1);
        assertThat(engine.lookup("m", hashes(a)).matchedBlocks()).isEqualTo(4);
    }

    @Test
    void hitInSlowerTierIsPromotedWhenTheFasterTierAsks() throws Exception {
        engine(4, 16, Map.of(TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, true)));
        List<BlockKey> keys = storeChain("m", 1, 4);
        engine.evict(TierId.HBM, 0, 4);
        assertThat(engine.info(keys.get(0)).fastestTier()).isEqualTo(TierId.DRAM);
        assertReadsBack(keys.get(0), 1);
        engine.awaitMoves();
        assertThat(engine.info(keys.get(0)).fastestTier()).isEqualTo(TierId.HBM);
        assertThat(counted("promoted.DRAM.HBM")).isEqualTo(1);
        assertReadsBack(keys.get(0), 1);
    }

    @Test
    void storingTheSameKeyWithOtherBytesIsRefused() throws Exception {
        engine(0, 8, Map.of());
        BlockKey key = TestBlocks.key("m", 1);
        engine.put(key, null, TestBlocks.bytes(arena, 1, BLOCK));
        assertThat(engine.put(key, null, TestBlocks.bytes(arena, 1, BLOCK))).isEqualTo(TierId.DRAM);
        assertThatThrownBy(() -> engine.put(key, null, TestBlocks.bytes(arena, 2, BLOCK)))
                .hasMessageContaining("different bytes");
    }

    @Test
    void deletedNamespaceLeavesOtherNamespacesAlone() throws Exception {
        engine(0, 32, Map.of());
        storeChain("a", 1, 5);
        List<BlockKey> b = storeChain("b", 1, 5);
        assertThat(engine.deleteNamespace("a")).isEqualTo(5);
        assertThat(engine.blockCount()).isEqualTo(5);
        assertThat(engine.lookup("b", hashes(b)).matchedBlocks()).isEqualTo(5);
    }
}
