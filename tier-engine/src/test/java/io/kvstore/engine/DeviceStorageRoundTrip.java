package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.device.DeviceCopier;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.DeviceFileCopier;
import io.kvstore.tier.nvme.NvmeTier;
import io.kvstore.tier.nvme.NvmeTierConfig;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The round trip through the engine that every real device storage copier must pass (cuFile and NIXL
 * GDS on a GPU machine, NIXL POSIX over host memory here): HBM (8 blocks) over DRAM over NVMe, 24 blocks
 * stored, the victims straight on NVMe, DRAM untouched, every block back byte-exact, an NVMe hit promoted
 * straight into HBM, and every one of those moves made by the copier (none fell back to host memory).
 */
public final class DeviceStorageRoundTrip {

    private static final int BLOCK = 60_000;

    private DeviceStorageRoundTrip() {}

    /** An engine over {@code device} and an NVMe tier in {@code dir}, joined by the copier {@code files} makes. */
    public static TierEngine engine(
            DeviceCopier device, Path dir, Function<MemorySegment, DeviceFileCopier> files, boolean readBack)
            throws Exception {
        DeviceTier hbm = new DeviceTier(TierId.HBM, device, 4L * 65536);
        List<BlockTier> tiers = List.of(
                hbm,
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 16L * 65536, 4L * 65536),
                new NvmeTier(new NvmeTierConfig(List.of(dir), 64 << 20, 4 << 20, 1 << 20, 4)));
        Map<TierId, TierSettings> settings = new EnumMap<>(TierId.class);
        settings.put(TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, true));
        settings.put(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, true));
        return new TierEngine(
                tiers,
                settings,
                Duration.ofMinutes(2),
                EngineEvents.NONE,
                Clock.systemUTC(),
                files.apply(hbm.region()),
                readBack);
    }

    /** Runs the round trip on an engine from {@link #engine} with 8 blocks of HBM. */
    public static void run(TierEngine engine) throws Exception {
        try (Arena arena = Arena.ofShared()) {
            List<BlockKey> keys = new ArrayList<>();
            BlockHash parent = null;
            for (long id = 1; id <= 24; id++) {
                BlockKey key = TestBlocks.key("round-trip", id);
                engine.put(key, parent, TestBlocks.bytes(arena, id, BLOCK));
                keys.add(key);
                parent = key.hash();
            }
            engine.awaitMoves();
            assertThat(engine.tier(TierId.DRAM).blockCount())
                    .as("DRAM is skipped")
                    .isZero();
            assertThat(engine.tier(TierId.NVME).blockCount()).isGreaterThanOrEqualTo(16);
            assertThat(engine.info(keys.getFirst()).tiers()).containsExactly(TierId.NVME);
            MemorySegment dst = arena.allocate(BLOCK, 4096);
            for (int i = 0; i < keys.size(); i++) {
                engine.get(keys.get(i), dst);
                assertThat(dst.mismatch(TestBlocks.bytes(arena, i + 1, BLOCK)))
                        .as("block %d", i + 1)
                        .isEqualTo(-1);
                engine.awaitMoves();
            }
            assertThat(engine.info(keys.getLast()).tiers()).contains(TierId.HBM, TierId.NVME);
            engine.get(keys.getLast(), dst); // from HBM, promoted straight from NVMe, checked on the way out
            assertThat(dst.mismatch(TestBlocks.bytes(arena, keys.size(), BLOCK)))
                    .isEqualTo(-1);
            assertThat(engine.deviceStorageFallbacks())
                    .as("moves that went through host memory because the copier failed")
                    .isZero();
            assertThat(engine.deviceStorageRoute()).doesNotContain("failing");
        }
    }
}
