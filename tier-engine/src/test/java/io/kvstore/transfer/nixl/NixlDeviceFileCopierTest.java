package io.kvstore.transfer.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.engine.DeviceStorageRoundTrip;
import io.kvstore.engine.TierEngine;
import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.nixl.NixlBackendProbe;
import io.kvstore.tier.device.CudaDeviceCopier;
import io.kvstore.tier.device.EmulatedDeviceCopier;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link NixlDeviceFileCopier} as the engine's device storage path: over NIXL's POSIX backend with the
 * emulated device region as {@code DRAM_SEG} here and in CI (real NIXL, one agent for every block file; host
 * memory, so it proves the plumbing, not DMA), and over {@code GDS_MT} with real VRAM where a GPU and the
 * plugin exist (skipped elsewhere, with the reason).
 */
class NixlDeviceFileCopierTest {

    @TempDir
    Path dir;

    @Test
    void theEngineDemotesAndPromotesThroughNixlPosixOverTheEmulatedDeviceRegion() throws Exception {
        NixlRequirement.assumeNixl(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        var posix = NixlBackendProbe.ofThisMachine().probe("POSIX");
        NixlRequirement.assumeNixl(posix.available(), () -> "skipped: " + posix.detail());
        java.util.List<NixlDeviceFileCopier> made = new java.util.ArrayList<>();
        try (TierEngine engine = DeviceStorageRoundTrip.engine(
                new EmulatedDeviceCopier(8L * 65536),
                dir,
                region -> {
                    NixlDeviceFileCopier copier =
                            new NixlDeviceFileCopier("POSIX", Nixl.DRAM_SEG, region, 0, Duration.ofSeconds(60));
                    made.add(copier);
                    return copier;
                },
                true)) {
            assertThat(engine.deviceStorageRoute()).startsWith("NIXL POSIX");
            DeviceStorageRoundTrip.run(engine);
            assertThat(made).hasSize(1);
            assertThat(made.getFirst().registeredFiles())
                    .as(
                            "the block files the round trip touched, all on the one agent %s",
                            made.getFirst().agentName())
                    .isPositive();
        }
    }

    @Test
    void theEngineDemotesAndPromotesThroughNixlGdsMtOnAGpu() throws Exception {
        // GDS is not promised by KVSTORE_REQUIRE_NIXL (the CI build is CPU-only): skip with the reason everywhere
        assumeTrue(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        assumeTrue(
                CudaDeviceCopier.availability().available(),
                () -> "skipped: no CUDA device for VRAM_SEG: "
                        + CudaDeviceCopier.availability().detail());
        var gds = NixlBackendProbe.ofThisMachine().probe("GDS_MT");
        assumeTrue(gds.available(), () -> "skipped: NIXL's GDS_MT backend is unusable here: " + gds.detail());
        try (TierEngine engine = DeviceStorageRoundTrip.engine(
                new CudaDeviceCopier(0, 8L * 65536),
                dir,
                region -> new NixlDeviceFileCopier("GDS_MT", Nixl.VRAM_SEG, region, 0, Duration.ofSeconds(60)),
                false)) {
            DeviceStorageRoundTrip.run(engine);
        }
    }
}
