package io.kvstore.service.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.block.TierId;
import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.ffm.nixl.NixlException;
import io.kvstore.nixl.DevicePathChoice;
import io.kvstore.nixl.DevicePathChoice.StoragePath;
import io.kvstore.nixl.NixlBackendProbe;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.device.EmulatedDeviceCopier;
import io.kvstore.tier.nvme.DeviceFileCopier;
import io.kvstore.transfer.nixl.NixlDeviceFileCopier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which copier the service hands the engine for each decided device path, and the route it shows when it
 * hands none. The decisions are made up here (a CUDA-backed tier cannot exist without a GPU); the device
 * tier is emulated, which is all {@link DeviceStorage#open} touches before a copier opens.
 */
class DeviceStorageTest {

    @TempDir
    Path dir;

    private static DevicePathChoice.Decision decision(StoragePath path) {
        return new DevicePathChoice.Decision(false, "test", path, "decided for the test");
    }

    @Test
    void throughHostHandsTheEngineNoCopier() {
        try (DeviceTier hbm = new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(1 << 20), 1 << 18)) {
            DeviceStorage.Opened opened = DeviceStorage.open(decision(StoragePath.THROUGH_HOST), hbm, List.of(dir));
            assertThat(opened.copier()).isNull();
            assertThat(opened.route()).isEqualTo(DeviceStorage.THROUGH_DRAM);
        }
    }

    @Test
    void aGdsPathWithoutAnNvmeTierHandsNoCopierAndSaysWhy() {
        try (DeviceTier hbm = new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(1 << 20), 1 << 18)) {
            DeviceStorage.Opened opened = DeviceStorage.open(decision(StoragePath.CUFILE), hbm, List.of());
            assertThat(opened.copier()).isNull();
            assertThat(opened.route()).contains("no NVMe tier");
        }
    }

    @Test
    void aCopierThatCannotOpenFallsBackThroughDramAndSaysWhy() {
        assumeFalse(CuFile.availability().available(), "libcufile loads here; this test needs it missing");
        try (DeviceTier hbm = new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(1 << 20), 1 << 18)) {
            DeviceStorage.Opened opened = DeviceStorage.open(decision(StoragePath.CUFILE), hbm, List.of(dir));
            assertThat(opened.copier()).isNull();
            assertThat(opened.route())
                    .startsWith("CUFILE could not be opened (")
                    .endsWith(DeviceStorage.THROUGH_DRAM);
        }
    }

    @Test
    void theProbeMovesASlotThroughARealNixlBackendAndBack() throws Exception {
        assumeTrue(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        var posix = NixlBackendProbe.ofThisMachine().probe("POSIX");
        assumeTrue(posix.available(), () -> "skipped: " + posix.detail());
        try (Arena arena = Arena.ofShared()) {
            MemorySegment region = arena.allocate(1 << 16, 4096);
            region.asSlice(0, 4096).fill((byte) 0x5A);
            try (var copier = new NixlDeviceFileCopier("POSIX", Nixl.DRAM_SEG, region, 0, Duration.ofSeconds(60))) {
                DeviceStorage.probe(copier, dir);
            }
            assertThat(region.asSlice(0, 4096)
                            .mismatch(region.asSlice(4096, 4096).fill((byte) 0x5A)))
                    .as("the slot came back as it went")
                    .isEqualTo(-1);
        }
        assertThat(Files.exists(dir.resolve(".device-storage-probe"))).isFalse();
    }

    @Test
    void aBackendThatCannotBeCreatedFailsWhenTheCopierIsMadeBeforeAnyBlockMoves() throws Exception {
        assumeTrue(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        try (Arena arena = Arena.ofShared()) {
            MemorySegment region = arena.allocate(1 << 16, 4096);
            // DeviceStorage.open answers this with one WARN line and the route through DRAM
            assertThatThrownBy(() -> new NixlDeviceFileCopier(
                            "NO_SUCH_BACKEND", Nixl.DRAM_SEG, region, 0, Duration.ofSeconds(60)))
                    .isInstanceOf(NixlException.class)
                    .hasMessageContaining("NO_SUCH_BACKEND");
        }
        assertThat(Files.exists(dir.resolve(".device-storage-probe"))).isFalse();
    }

    /** Records the files it is handed and copies nothing: the probe's walk over directories is under test. */
    private static final class RecordingCopier implements DeviceFileCopier {
        final List<String> written = new CopyOnWriteArrayList<>();

        @Override
        public String name() {
            return "recording copier";
        }

        @Override
        public boolean standIn() {
            return true;
        }

        @Override
        public void write(long deviceOffset, BlockFile file, long fileOffset, long length) {
            written.add(file.path());
        }

        @Override
        public void read(BlockFile file, long fileOffset, long deviceOffset, long length) {}

        @Override
        public void close() {}
    }

    @Test
    void theProbeTriesEveryNvmeDirectoryAndNamesTheOneThatFails() throws Exception {
        Path first = dir.resolve("nvme0");
        Path second = dir.resolve("nvme1");
        RecordingCopier copier = new RecordingCopier();

        DeviceStorage.probe(copier, List.of(first, second));
        assertThat(copier.written)
                .containsExactly(
                        first.resolve(".device-storage-probe").toString(),
                        second.resolve(".device-storage-probe").toString());

        Path notADirectory = Files.writeString(dir.resolve("a-file"), "x").resolve("nvme2");
        assertThatThrownBy(() -> DeviceStorage.probe(copier, List.of(first, notADirectory)))
                .isInstanceOf(java.io.IOException.class)
                .hasMessageContaining(notADirectory.toString());
    }
}
