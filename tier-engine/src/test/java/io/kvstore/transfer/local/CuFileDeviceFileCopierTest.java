package io.kvstore.transfer.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.engine.DeviceStorageRoundTrip;
import io.kvstore.engine.TierEngine;
import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.tier.device.CudaDeviceCopier;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * {@link CuFileDeviceFileCopier} as the engine's device storage path on a GPU machine: real VRAM (the
 * device tier on {@code cudaMalloc}), cuFile between it and the NVMe tier's O_DIRECT files, the engine's
 * round trip byte-exact. Skipped, with the reason, where libcufile or a GPU is missing (this project's CI);
 * the same engine logic runs on CPU in {@code DeviceStoragePathTest} with a labelled stand-in.
 */
class CuFileDeviceFileCopierTest {

    @Test
    void theEngineDemotesToNvmeAndPromotesBackThroughCuFile() throws Exception {
        assumeTrue(CuFile.availability().available(), () -> "skipped: " + CuFile.availability());
        assumeTrue(
                CudaDeviceCopier.availability().available(),
                () -> "skipped: " + CudaDeviceCopier.availability().detail());
        String base = System.getenv("KVSTORE_GDS_DIR"); // a filesystem GDS supports (ext4/xfs on NVMe)
        Path dir = Files.createTempDirectory(
                Files.createDirectories(Path.of(base == null || base.isBlank() ? "target" : base)), "gds-engine");
        try (TierEngine engine = DeviceStorageRoundTrip.engine(
                new CudaDeviceCopier(0, 8L * 65536),
                dir,
                region -> new CuFileDeviceFileCopier(CuFile.get(), region),
                true)) {
            assertThat(engine.deviceStorageRoute()).startsWith("cuFile");
            DeviceStorageRoundTrip.run(engine);
        }
    }
}
