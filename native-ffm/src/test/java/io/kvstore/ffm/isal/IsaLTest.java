package io.kvstore.ffm.isal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

class IsaLTest {

    @Test
    void libisalIsInstalledByTheProjectsSetUp() {
        assertThat(IsaL.availability().available())
                .as("libisal (apt-get install libisal2; ./kvstore deps installs it): %s", IsaL.availability())
                .isTrue();
    }

    @Test
    void crc32cEqualsTheJdksForEveryLengthAndAlignment() {
        long seed = System.nanoTime();
        SplittableRandom random = new SplittableRandom(seed);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(3 << 20, 4096);
            byte[] bytes = new byte[(int) buffer.byteSize()];
            random.nextBytes(bytes);
            MemorySegment.copy(bytes, 0, buffer, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, bytes.length);
            int[] lengths = {0, 1, 7, 8, 63, 64, 255, 4095, 4096, 65_537, 262_144, 2 << 20};
            for (int length : lengths) {
                for (int offset : new int[] {0, 1, 3, 4096 + 5}) {
                    MemorySegment slice = buffer.asSlice(offset, length);
                    CRC32C jdk = new CRC32C();
                    jdk.update(bytes, offset, length);
                    assertThat(IsaL.crc32c(slice))
                            .as("length %d at offset %d (seed %d)", length, offset, seed)
                            .isEqualTo((int) jdk.getValue());
                }
            }
        }
    }

    @Test
    void heapMemoryIsRefusedNotMisread() {
        assertThatThrownBy(() -> IsaL.crc32c(MemorySegment.ofArray(new byte[16])))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("heap");
    }
}
