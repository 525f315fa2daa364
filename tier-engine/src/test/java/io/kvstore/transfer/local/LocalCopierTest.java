package io.kvstore.transfer.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.transfer.TransferSpan;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalCopierTest {

    private static MemorySegment filled(Arena arena, long size, int seed) {
        MemorySegment s = arena.allocate(size, 4096);
        for (long i = 0; i < size / 4; i++) {
            s.setAtIndex(ValueLayout.JAVA_INT, i, (int) (i * 31 + seed));
        }
        return s;
    }

    @Test
    void copiesSpansBetweenHostSegments() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = filled(arena, 1 << 16, 1);
            MemorySegment dst = arena.allocate(1 << 16);
            long n = LocalCopier.copy(
                    src, dst, List.of(new TransferSpan(0, 4096, 4096), new TransferSpan(4096, 0, 4096)));
            assertThat(n).isEqualTo(8192);
            assertThat(dst.asSlice(0, 4096).mismatch(src.asSlice(4096, 4096))).isEqualTo(-1);
            assertThat(dst.asSlice(4096, 4096).mismatch(src.asSlice(0, 4096))).isEqualTo(-1);
        }
    }

    @Test
    void blocksRoundTripThroughAFile(@TempDir Path dir) throws Exception {
        try (Arena arena = Arena.ofConfined();
                FileChannel file = FileChannel.open(
                        dir.resolve("blocks"),
                        StandardOpenOption.CREATE,
                        StandardOpenOption.READ,
                        StandardOpenOption.WRITE)) {
            MemorySegment src = filled(arena, 1 << 20, 2);
            MemorySegment back = arena.allocate(1 << 20);
            List<TransferSpan> spans =
                    List.of(new TransferSpan(0, 1 << 19, 1 << 19), new TransferSpan(1 << 19, 0, 1 << 19));
            assertThat(LocalCopier.write(src, file, spans)).isEqualTo(1 << 20);
            assertThat(LocalCopier.read(file, back, spans)).isEqualTo(1 << 20);
            assertThat(back.mismatch(src)).isEqualTo(-1);
            assertThatThrownBy(() -> LocalCopier.read(file, back, List.of(new TransferSpan(0, 1 << 20, 4096))))
                    .isInstanceOf(UncheckedIOException.class)
                    .hasMessageContaining("end of file");
        }
    }
}
