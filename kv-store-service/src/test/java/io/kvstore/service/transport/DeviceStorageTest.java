package io.kvstore.service.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.kvstore.block.TierId;
import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.nixl.DevicePathChoice;
import io.kvstore.nixl.DevicePathChoice.StoragePath;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.device.EmulatedDeviceCopier;
import org.junit.jupiter.api.Test;

/**
 * Which copier the service hands the engine for each decided device path, and the route it shows when it
 * hands none. The decisions are made up here (a CUDA-backed tier cannot exist without a GPU); the device
 * tier is emulated, which is all {@link DeviceStorage#open} touches before a copier opens.
 */
class DeviceStorageTest {

    private static DevicePathChoice.Decision decision(StoragePath path) {
        return new DevicePathChoice.Decision(false, "test", path, "decided for the test");
    }

    @Test
    void throughHostHandsTheEngineNoCopier() {
        try (DeviceTier hbm = new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(1 << 20), 1 << 18)) {
            DeviceStorage.Opened opened = DeviceStorage.open(decision(StoragePath.THROUGH_HOST), hbm, true);
            assertThat(opened.copier()).isNull();
            assertThat(opened.route()).isEqualTo(DeviceStorage.THROUGH_DRAM);
        }
    }

    @Test
    void aGdsPathWithoutAnNvmeTierHandsNoCopierAndSaysWhy() {
        try (DeviceTier hbm = new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(1 << 20), 1 << 18)) {
            DeviceStorage.Opened opened = DeviceStorage.open(decision(StoragePath.CUFILE), hbm, false);
            assertThat(opened.copier()).isNull();
            assertThat(opened.route()).contains("no NVMe tier");
        }
    }

    @Test
    void aCopierThatCannotOpenFallsBackThroughDramAndSaysWhy() {
        assumeFalse(CuFile.availability().available(), "libcufile loads here; this test needs it missing");
        try (DeviceTier hbm = new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(1 << 20), 1 << 18)) {
            DeviceStorage.Opened opened = DeviceStorage.open(decision(StoragePath.CUFILE), hbm, true);
            assertThat(opened.copier()).isNull();
            assertThat(opened.route())
                    .startsWith("CUFILE could not be opened (")
                    .endsWith(DeviceStorage.THROUGH_DRAM);
        }
    }
}
