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

    @Test
    void eachThreadReportsTheErrnoOfItsOwnFailedCall() throws Exception {
        // ENOENT on one half of the threads, EBADF on the other, interleaved on reused per-thread state
        String missing = dir.resolve("absent/f").toString();
        int threads = 8;
        java.util.List<java.util.concurrent.Future<java.util.List<Integer>>> results = new java.util.ArrayList<>();
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(threads)) {
            for (int t = 0; t < threads; t++) {
                boolean open = t % 2 == 0;
                results.add(pool.submit(() -> {
                    java.util.List<Integer> seen = new java.util.ArrayList<>();
                    for (int i = 0; i < 500; i++) {
                        try {
                            if (open) {
                                LibC.open(missing, LibC.O_RDWR, 0);
                            } else {
                                LibC.close(987654);
                            }
                        } catch (PosixException e) {
                            seen.add(e.errno());
                        }
                    }
                    return seen;
                }));
            }
            for (int t = 0; t < threads; t++) {
                int expected = t % 2 == 0 ? 2 /* ENOENT */ : 9 /* EBADF */;
                assertThat(results.get(t).get()).hasSize(500).containsOnly(expected);
            }
        }
    }

    @Test
    void pollWaitsForTheTimeoutOnADescriptorWithNothingToRead() throws Exception {
        Path fifo = dir.resolve("pipe");
        // a pipe read end that nobody writes: poll must time out (0) rather than report data
        Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).start();
        assertThat(mkfifo.waitFor()).isZero();
        int fd = LibC.open(fifo.toString(), LibC.O_RDWR, 0); // O_RDWR: open without waiting for a writer
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pollfd = arena.allocate(LibC.POLLFD);
            pollfd.set(ValueLayout.JAVA_INT, 0, fd);
            pollfd.set(ValueLayout.JAVA_SHORT, 4, LibC.POLLIN);
            long start = System.nanoTime();
            assertThat(LibC.poll(pollfd, 1, 50)).isZero();
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(40_000_000L);
        } finally {
            LibC.close(fd);
        }
    }

    @Test
    void captureOutputReturnsWhatWasPrintedToTheStream() {
        var linker = java.lang.foreign.Linker.nativeLinker();
        var fputs = linker.downcallHandle(
                linker.defaultLookup().find("fputs").orElseThrow(),
                java.lang.foreign.FunctionDescriptor.of(
                        ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment text = arena.allocateFrom("lane[0]: 1:tcp/lo md[0] rma_bw#0\n");
            String out = LibC.captureOutput(file -> {
                int rc = (int) fputs.invokeExact(text, file);
            });
            assertThat(out).isEqualTo("lane[0]: 1:tcp/lo md[0] rma_bw#0\n");
        }
    }
}
