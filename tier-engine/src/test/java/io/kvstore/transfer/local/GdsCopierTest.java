package io.kvstore.transfer.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.ffm.cuda.CudaRuntime;
import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.ffm.cufile.CuFileHandle;
import io.kvstore.ffm.libc.LibC;
import io.kvstore.ffm.libc.PosixException;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Blocks from VRAM to a file and back with GPUDirect Storage, where libcufile, the CUDA runtime and a
 * GPU exist (the GPU machine; skipped with the reason elsewhere). Blocks are written in reverse order and
 * read back in a third order, so a mix-up of offsets shows.
 */
class GdsCopierTest {

    private static final int BLOCK = 1 << 20;
    private static final int BLOCKS = 16;

    @Test
    void blocksWrittenFromVramToAFileReadBackIntoVramIdentical() throws Exception {
        assumeTrue(CuFile.availability().available(), () -> "skipped: " + CuFile.availability());
        assumeTrue(CudaRuntime.availability().available(), () -> "skipped: " + CudaRuntime.availability());
        assumeTrue(CudaRuntime.get().deviceCount() > 0, "skipped: no CUDA device");
        String base = System.getenv("KVSTORE_GDS_DIR");
        Path dir = Files.createTempDirectory(
                Files.createDirectories(Path.of(base == null || base.isBlank() ? "target" : base)), "gds-copier");
        Path file = dir.resolve("blocks");
        int fd;
        try {
            fd = LibC.open(file.toString(), LibC.O_RDWR | LibC.O_CREAT | LibC.O_DIRECT | LibC.O_CLOEXEC, 0600);
        } catch (PosixException e) {
            assumeTrue(false, () -> "skipped: " + dir + " does not take O_DIRECT files: " + e.getMessage());
            return;
        }
        CudaRuntime cuda = CudaRuntime.get();
        CuFile cufile = CuFile.get();
        cufile.driverOpen();
        MemorySegment source = cuda.malloc((long) BLOCKS * BLOCK);
        MemorySegment target = cuda.malloc((long) BLOCKS * BLOCK);
        try (Arena arena = Arena.ofConfined();
                CuFileHandle handle = cufile.register(fd, file.toString())) {
            MemorySegment host = arena.allocate((long) BLOCKS * BLOCK, 4096);
            for (long i = 0; i < host.byteSize(); i += 8) {
                host.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
            }
            cuda.memcpy(source, host, host.byteSize(), CudaRuntime.CopyKind.HOST_TO_DEVICE);
            GdsCopier copier = new GdsCopier(cufile);
            List<TransferSpan> out = new ArrayList<>();
            for (int b = 0; b < BLOCKS; b++) {
                out.add(new TransferSpan((long) b * BLOCK, (long) (BLOCKS - 1 - b) * BLOCK, BLOCK));
            }
            assertThat(copier.write(source, handle, out)).isEqualTo((long) BLOCKS * BLOCK);
            List<TransferSpan> in = new ArrayList<>();
            for (int b = 0; b < BLOCKS; b++) {
                in.add(new TransferSpan((long) b * BLOCK, (long) (BLOCKS - 1 - b) * BLOCK, BLOCK));
            }
            assertThat(copier.read(handle, target, in.reversed())).isEqualTo((long) BLOCKS * BLOCK);
            MemorySegment back = arena.allocate(host.byteSize(), 4096);
            cuda.memcpy(back, target, back.byteSize(), CudaRuntime.CopyKind.DEVICE_TO_HOST);
            assertThat(back.mismatch(host)).isEqualTo(-1);
        } finally {
            cuda.free(source);
            cuda.free(target);
            LibC.close(fd);
            cufile.driverClose();
        }
    }
}
