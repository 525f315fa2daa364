package io.kvstore.tier;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

class ChecksumsTest {

    @Test
    void nativeAndHeapBytesGiveTheStandardCrc32cAtEverySize() {
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        try (Arena arena = Arena.ofConfined()) {
            for (int length : new int[] {0, 1, 255, 256, 257, 4096, 16_384, 262_144, 2 << 20}) {
                byte[] bytes = new byte[length];
                random.nextBytes(bytes);
                CRC32C reference = new CRC32C();
                reference.update(bytes);
                MemorySegment offHeap = arena.allocate(Math.max(1, length)).asSlice(0, length);
                MemorySegment.copy(bytes, 0, offHeap, ValueLayout.JAVA_BYTE, 0, length);
                assertThat(Checksums.crc32c(offHeap))
                        .as("native, %d bytes (seed %d)", length, seed)
                        .isEqualTo((int) reference.getValue());
                assertThat(Checksums.crc32c(MemorySegment.ofArray(bytes)))
                        .as("heap, %d bytes (seed %d)", length, seed)
                        .isEqualTo((int) reference.getValue());
            }
        }
    }

    @Test
    void aFlippedBitChangesTheChecksum() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(65_536);
            block.fill((byte) 0x5a);
            int before = Checksums.crc32c(block);
            block.set(ValueLayout.JAVA_BYTE, 40_000, (byte) 0x5b);
            assertThat(Checksums.crc32c(block)).isNotEqualTo(before);
        }
    }
}
