package io.kvstore.ffm.libc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LibCTest {

    @TempDir
    Path dir;

    @Test
    void directWriteAndReadRoundTripOnARealFile() throws Exception {
        String path = dir.resolve("f.dat").toString();
        int fd;
        try {
            fd = LibC.open(path, LibC.O_RDWR | LibC.O_CREAT | LibC.O_CLOEXEC | LibC.O_DIRECT, 0644);
        } catch (PosixException e) {
            assertThat(e.errno()).isEqualTo(LibC.EINVAL); // filesystem without O_DIRECT
            fd = LibC.open(path, LibC.O_RDWR | LibC.O_CREAT | LibC.O_CLOEXEC, 0644);
        }
        try (Arena arena = Arena.ofConfined()) {
            LibC.fallocate(fd, 0, 1 << 20, path);
            assertThat(Files.size(Path.of(path))).isEqualTo(1 << 20);
            MemorySegment out = arena.allocate(8192, 4096);
            for (int i = 0; i < 8192; i += 8) {
                out.set(ValueLayout.JAVA_LONG, i, i * 31L + 7);
            }
            LibC.pwriteFully(fd, out, 4096, path);
            LibC.fdatasync(fd, path);
            MemorySegment in = arena.allocate(8192, 4096);
            LibC.preadFully(fd, in, 4096, path);
            assertThat(in.mismatch(out)).isEqualTo(-1);
        } finally {
            LibC.close(fd);
        }
    }

    @Test
    void failedOpenNamesCallPathAndStrerror() {
        String missing = dir.resolve("no/such/dir/f").toString();
        assertThatThrownBy(() -> LibC.open(missing, LibC.O_RDWR, 0))
                .isInstanceOf(PosixException.class)
                .hasMessageContaining("open(" + missing)
                .hasMessageContaining("No such file or directory")
                .satisfies(e -> assertThat(((PosixException) e).errno()).isEqualTo(2));
    }

    @Test
    void readPastEndOfFileIsAnErrorNotAShortBuffer() throws Exception {
        String path = dir.resolve("small").toString();
        Files.write(Path.of(path), new byte[100]);
        int fd = LibC.open(path, LibC.O_RDWR, 0);
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> LibC.preadFully(fd, arena.allocate(4096), 0, path))
                    .hasMessageContaining("end of file");
        } finally {
            LibC.close(fd);
        }
    }

    @Test
    void closingABadDescriptorReportsEbadf() {
        assertThatThrownBy(() -> LibC.close(987654))
                .isInstanceOf(PosixException.class)
                .hasMessageContaining("Bad file descriptor");
    }

    @Test
    void mlockAndMunlockLockRealPages() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment page = arena.allocate(4096, 4096);
            int errno = LibC.mlock(page);
            if (errno == 0) {
                assertThat(LibC.munlock(page)).isZero();
            } else {
                assertThat(LibC.strerror(errno)).isNotBlank();
            }
        }
    }
}
