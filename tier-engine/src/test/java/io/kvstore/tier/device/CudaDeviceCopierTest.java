package io.kvstore.tier.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.tier.Checksums;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** The device tier on real GPU memory: runs where libcudart and a CUDA device are, skips with the reason elsewhere. */
class CudaDeviceCopierTest {

    @Test
    void blocksRoundTripThroughCudaDeviceMemory() throws Exception {
        var availability = CudaDeviceCopier.availability();
        System.out.println("CUDA device tier: " + availability);
        assumeTrue(availability.available(), () -> "skipped: " + availability);
        int block = 2 << 20;
        try (Arena arena = Arena.ofShared();
                DeviceTier hbm = new DeviceTier(TierId.HBM, new CudaDeviceCopier(0, 16L * block), block)) {
            assertThat(hbm.provider()).isEqualTo("cuda-device");
            assertThat(hbm.emulated()).isFalse();
            for (int i = 0; i < 16; i++) {
                MemorySegment b = arena.allocate(block, 4096);
                for (long o = 0; o < block; o += 8) {
                    b.set(ValueLayout.JAVA_LONG, o, o * 7 + i);
                }
                BlockRecord r =
                        new BlockRecord(new BlockKey("gpu", BlockHash.ofLong(i)), null, block, Checksums.crc32c(b));
                hbm.write(r, b);
                MemorySegment back = arena.allocate(block, 4096);
                hbm.read(r.key(), back);
                assertThat(back.mismatch(b)).isEqualTo(-1);
            }
            assertThat(hbm.blockCount()).isEqualTo(16);
        }
    }
}
