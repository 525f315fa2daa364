package io.kvstore.tier.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.TestBlocks;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierFullException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MemoryTierTest {

    private final Arena arena = Arena.ofConfined();
    private final MemoryTier tier = new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 256 * 1024, 64 * 1024);

    @AfterEach
    void close() {
        tier.close();
        arena.close();
    }

    private BlockRecord store(long id, int length) throws Exception {
        MemorySegment src = TestBlocks.bytes(arena, id, length);
        BlockRecord record = new BlockRecord(TestBlocks.key("ns", id), null, length, Checksums.crc32c(src));
        tier.write(record, src);
        return record;
    }

    @Test
    void readReturnsExactlyTheBytesWritten() throws Exception {
        BlockRecord record = store(1, 10_000);
        MemorySegment dst = arena.allocate(16_384);
        tier.read(record.key(), dst);
        assertThat(dst.asSlice(0, 10_000).mismatch(TestBlocks.bytes(arena, 1, 10_000)))
                .isEqualTo(-1);
        assertThat(tier.usedBytes()).isEqualTo(12_288);
        assertThat(tier.blockCount()).isEqualTo(1);
    }

    @Test
    void flippedByteInSlotFailsChecksum() throws Exception {
        BlockRecord record = store(2, 4096);
        long offset = tier.offsetOf(record.key());
        MemorySegment region = tier.region();
        region.set(ValueLayout.JAVA_BYTE, offset + 100, (byte) (region.get(ValueLayout.JAVA_BYTE, offset + 100) ^ 1));
        assertThatThrownBy(() -> tier.read(record.key(), arena.allocate(4096)))
                .isInstanceOf(ChecksumMismatchException.class);
        assertThatThrownBy(() -> tier.verifiedView(record.key())).isInstanceOf(ChecksumMismatchException.class);
    }

    @Test
    void fullTierRefusesWithoutLosingBlocks() throws Exception {
        for (int i = 0; i < 4; i++) {
            store(i, 64 * 1024);
        }
        assertThatThrownBy(() -> store(99, 64 * 1024)).isInstanceOf(TierFullException.class);
        assertThat(tier.blockCount()).isEqualTo(4);
        assertThat(tier.usedBytes()).isLessThanOrEqualTo(tier.capacityBytes());
        tier.delete(TestBlocks.key("ns", 0));
        store(99, 64 * 1024);
        assertThat(tier.contains(TestBlocks.key("ns", 99))).isTrue();
    }

    @Test
    void missingBlockIsReportedByKey() {
        BlockKey key = TestBlocks.key("ns", 7);
        assertThatThrownBy(() -> tier.read(key, arena.allocate(4096)))
                .isInstanceOf(BlockNotFoundException.class)
                .hasMessageContaining(key.toString());
    }

    @Test
    void emulatedDeviceIsLabelled() {
        try (MemoryTier hbm = new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 64 * 1024, 64 * 1024)) {
            assertThat(hbm.provider()).isEqualTo("emulated-device");
            assertThat(hbm.emulated()).isTrue();
        }
        assertThat(tier.emulated()).isFalse();
    }

    @Test
    void unknownProviderNameListsTheValidOnes() {
        assertThatThrownBy(() -> MemoryProvider.named("gpu"))
                .hasMessageContaining("host, emulated-device, cuda-pinned, cuda-device");
    }

    @Test
    void cudaProvidersSayWhyTheyAreUnavailableWithoutAGpu() {
        for (MemoryProvider provider :
                java.util.List.of(MemoryProvider.named("cuda-pinned"), MemoryProvider.named("cuda-device"))) {
            var availability = provider.availability();
            if (!availability.available()) {
                assertThat(availability.detail()).isNotBlank();
                assertThatThrownBy(() -> new MemoryTier(TierId.HBM, provider, 1 << 20, 1 << 20))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining(provider.name())
                        .hasMessageContaining(availability.detail());
            }
        }
    }

    @Test
    void deviceMemoryIsRefusedByTheCpuCopyingTier() {
        var device = MemoryProvider.named("cuda-device");
        org.junit.jupiter.api.Assumptions.assumeTrue(
                device.availability().available(), () -> "skipped: " + device.availability());
        assertThatThrownBy(() -> new MemoryTier(TierId.HBM, device, 1 << 20, 1 << 20))
                .hasMessageContaining("only CUDA can copy");
    }
}
