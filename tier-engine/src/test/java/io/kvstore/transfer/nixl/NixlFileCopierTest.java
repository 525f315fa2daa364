package io.kvstore.transfer.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.ffm.libc.LibC;
import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.nixl.NixlBackendProbe;
import io.kvstore.tier.device.CudaDeviceCopier;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link NixlFileCopier} against the real NIXL: host memory to a file and back through the POSIX backend
 * (here and in CI), and device memory through the GDS backend where a GPU and NIXL's GDS plugin exist
 * (skipped elsewhere, with the reason).
 */
class NixlFileCopierTest {

    private static final long BLOCK = 256 * 1024;
    private static final int BLOCKS = 16;

    @TempDir
    Path dir;

    private static ByteBuffer fileBytes(Path file, long offset, long length) throws Exception {
        try (FileChannel ch = FileChannel.open(file)) {
            ByteBuffer b = ByteBuffer.allocate((int) length);
            while (b.hasRemaining() && ch.read(b, offset + b.position()) > 0) {
                // read until full
            }
            return b.flip();
        }
    }

    @Test
    void posixBackendWritesHostBlocksIntoTheFileAndReadsThemBack() throws Exception {
        NixlRequirement.assumeNixl(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        var posix = NixlBackendProbe.ofThisMachine().probe("POSIX");
        NixlRequirement.assumeNixl(posix.available(), () -> "skipped: " + posix.detail());
        Path path = dir.resolve("blocks.dat");
        int fd = LibC.open(path.toString(), LibC.O_RDWR | LibC.O_CREAT, 0644);
        try (Arena arena = Arena.ofShared()) {
            long bytes = BLOCK * BLOCKS;
            LibC.fallocate(fd, 0, bytes, path.toString());
            MemorySegment region = arena.allocate(2 * bytes, 4096);
            MemorySegment source = region.asSlice(0, bytes);
            MemorySegment back = region.asSlice(bytes, bytes);
            Patterns.fill(source, 7);
            try (NixlFileCopier copier = new NixlFileCopier(
                    "kvstore-file-copier", "POSIX", Nixl.DRAM_SEG, region, 0, fd, bytes, Duration.ofSeconds(60))) {
                assertThat(copier.backend()).isEqualTo("POSIX");
                // block i of memory goes to file block BLOCKS-1-i: scattered, nothing coalesces
                List<TransferSpan> out = new java.util.ArrayList<>();
                for (int i = 0; i < BLOCKS; i++) {
                    out.add(new TransferSpan(i * BLOCK, (BLOCKS - 1 - i) * BLOCK, BLOCK));
                }
                assertThat(copier.write(out)).isEqualTo(bytes);
                for (int i = 0; i < BLOCKS; i++) {
                    assertThat(fileBytes(path, (BLOCKS - 1 - i) * BLOCK, BLOCK))
                            .as("file block %d holds memory block %d", BLOCKS - 1 - i, i)
                            .isEqualTo(source.asSlice(i * BLOCK, BLOCK).asByteBuffer());
                }
                List<TransferSpan> in = new java.util.ArrayList<>();
                for (int i = 0; i < BLOCKS; i++) {
                    in.add(new TransferSpan(bytes + i * BLOCK, (BLOCKS - 1 - i) * BLOCK, BLOCK));
                }
                assertThat(copier.read(in)).isEqualTo(bytes);
                assertThat(back.mismatch(source)).isEqualTo(-1);
                assertThatThrownBy(() -> copier.read(List.of(new TransferSpan(0, bytes - BLOCK + 1, BLOCK))))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("lies outside");
            }
        } finally {
            LibC.close(fd);
        }
        assertThat(Files.size(path)).isEqualTo(BLOCK * BLOCKS);
    }

    @Test
    void gdsBackendMovesDeviceMemoryToAFileAndBack() throws Exception {
        // GDS is not promised by KVSTORE_REQUIRE_NIXL (the CI build is CPU-only): skip with the reason everywhere
        assumeTrue(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        assumeTrue(
                CudaDeviceCopier.availability().available(),
                () -> "skipped: no CUDA device for VRAM_SEG: "
                        + CudaDeviceCopier.availability().detail());
        var gds = NixlBackendProbe.ofThisMachine().probe("GDS");
        assumeTrue(gds.available(), () -> "skipped: NIXL's GDS backend is unusable here: " + gds.detail());
        Path path = dir.resolve("device-blocks.dat");
        long bytes = BLOCK * BLOCKS;
        int fd = LibC.open(path.toString(), LibC.O_RDWR | LibC.O_CREAT | LibC.O_DIRECT, 0644);
        try (Arena arena = Arena.ofShared();
                CudaDeviceCopier device = new CudaDeviceCopier(0, 2 * bytes)) {
            LibC.fallocate(fd, 0, bytes, path.toString());
            MemorySegment host = arena.allocate(bytes, 4096);
            Patterns.fill(host, 11);
            device.toDevice(host, 0);
            try (NixlFileCopier copier = new NixlFileCopier(
                    "kvstore-gds-copier",
                    "GDS",
                    Nixl.VRAM_SEG,
                    device.region(),
                    0,
                    fd,
                    bytes,
                    Duration.ofSeconds(60))) {
                assertThat(copier.write(List.of(new TransferSpan(0, 0, bytes)))).isEqualTo(bytes);
                assertThat(fileBytes(path, 0, bytes)).isEqualTo(host.asByteBuffer());
                assertThat(copier.read(List.of(new TransferSpan(bytes, 0, bytes))))
                        .isEqualTo(bytes);
            }
            MemorySegment back = arena.allocate(bytes, 4096);
            device.toHost(bytes, back);
            assertThat(back.mismatch(host)).isEqualTo(-1);
        } finally {
            LibC.close(fd);
        }
    }
}
