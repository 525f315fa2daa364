package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.tier.nvme.StandInDeviceFileCopier;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A device storage copier that fails at run time (cuFile refusing to register a block file, as it does on a
 * filesystem whose device udev does not describe; a NIXL backend erroring) costs the direct path, never
 * the move: HBM and NVMe then exchange blocks through host memory, checked as on any other route, and go
 * back to the copier once it works. Before, HBM could not demote, filled up and refused every store.
 */
class DeviceStorageCopierFailureTest {

    private static final int BLOCK = DeviceStoragePathTest.BLOCK;

    @TempDir
    Path dir;

    private final Arena arena = Arena.ofShared();
    private StandInDeviceFileCopier copier;

    @AfterEach
    void closeArena() {
        arena.close();
    }

    private TierEngine open() throws Exception {
        StandInDeviceFileCopier[] out = new StandInDeviceFileCopier[1];
        TierEngine engine = DeviceStoragePathTest.open(dir, true, EngineEvents.NONE, out);
        copier = out[0];
        return engine;
    }

    private List<BlockKey> putChain(TierEngine engine, long first, int count) throws Exception {
        return DeviceStoragePathTest.putChain(engine, arena, "f", first, count);
    }

    private void assertReadsBack(TierEngine engine, BlockKey key, long id) throws Exception {
        DeviceStoragePathTest.assertReadsBack(engine, arena, key, id);
    }

    @Test
    void storesGoOnThroughHostMemoryWhileTheCopierFailsAndEveryBlockReadsBack() throws Exception {
        try (TierEngine engine = open()) {
            copier.failCopies(true);
            List<BlockKey> keys = putChain(engine, 1, 24); // 8 blocks of HBM: 16 or more must leave it

            assertThat(engine.tier(TierId.NVME).blockCount()).isGreaterThanOrEqualTo(16);
            assertThat(engine.tier(TierId.DRAM).blockCount())
                    .as("still past DRAM")
                    .isZero();
            assertThat(copier.writes()).isZero();
            assertThat(engine.deviceStorageFallbacks()).isGreaterThanOrEqualTo(16);
            assertThat(engine.deviceStorageRoute())
                    .contains("failing")
                    .contains("CU_FILE_HANDLE_NOT_REGISTERED")
                    .contains("through host memory");

            BlockKey first = keys.getFirst();
            assertThat(engine.info(first).tiers()).containsExactly(TierId.NVME);
            assertReadsBack(engine, first, 1); // from NVMe, then promoted to HBM through host memory
            engine.awaitMoves();
            assertThat(engine.info(first).tiers()).containsExactly(TierId.HBM, TierId.NVME);
            assertThat(copier.reads()).isZero();
            for (int i = 0; i < keys.size(); i++) {
                assertReadsBack(engine, keys.get(i), i + 1);
            }
        }
    }

    @Test
    void theCopierCarriesTheBlocksAgainOnceItWorks() throws Exception {
        try (TierEngine engine = open()) {
            copier.failCopies(true);
            putChain(engine, 1, 12);
            long fallbacks = engine.deviceStorageFallbacks();
            assertThat(fallbacks).isPositive();

            copier.failCopies(false);
            List<BlockKey> later = putChain(engine, 100, 12);

            assertThat(copier.writes()).as("demotions through the copier again").isPositive();
            assertThat(engine.deviceStorageFallbacks()).isEqualTo(fallbacks);
            assertThat(engine.deviceStorageRoute()).doesNotContain("failing");
            for (int i = 0; i < later.size(); i++) {
                assertReadsBack(engine, later.get(i), 100 + i);
            }
        }
    }
}
