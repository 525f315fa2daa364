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
                    "kvstore-file-copier", "POSIX", Nixl.DRAM_SEG, region, 0, Duration.ofSeconds(60))) {
                assertThat(copier.backend()).isEqualTo("POSIX");
                NixlFileCopier.File file = copier.register(fd, bytes);
                // block i of memory goes to file block BLOCKS-1-i: scattered, nothing coalesces
                List<TransferSpan> out = new java.util.ArrayList<>();
                for (int i = 0; i < BLOCKS; i++) {
                    out.add(new TransferSpan(i * BLOCK, (BLOCKS - 1 - i) * BLOCK, BLOCK));
                }
                assertThat(copier.write(file, out)).isEqualTo(bytes);
                for (int i = 0; i < BLOCKS; i++) {
                    assertThat(fileBytes(path, (BLOCKS - 1 - i) * BLOCK, BLOCK))
                            .as("file block %d holds memory block %d", BLOCKS - 1 - i, i)
                            .isEqualTo(source.asSlice(i * BLOCK, BLOCK).asByteBuffer());
                }
                List<TransferSpan> in = new java.util.ArrayList<>();
                for (int i = 0; i < BLOCKS; i++) {
                    in.add(new TransferSpan(bytes + i * BLOCK, (BLOCKS - 1 - i) * BLOCK, BLOCK));
                }
                assertThat(copier.read(file, in)).isEqualTo(bytes);
                assertThat(back.mismatch(source)).isEqualTo(-1);
                assertThatThrownBy(() -> copier.read(file, List.of(new TransferSpan(0, bytes - BLOCK + 1, BLOCK))))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("lies outside");
            }
        } finally {
            LibC.close(fd);
        }
        assertThat(Files.size(path)).isEqualTo(BLOCK * BLOCKS);
    }

    @Test
    void oneAgentMovesBlocksOfSeveralFilesAndRefusesAnUnregisteredOne() throws Exception {
        NixlRequirement.assumeNixl(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        var posix = NixlBackendProbe.ofThisMachine().probe("POSIX");
        NixlRequirement.assumeNixl(posix.available(), () -> "skipped: " + posix.detail());
        Path first = dir.resolve("blocks-0.dat");
        Path second = dir.resolve("blocks-1.dat");
        long bytes = BLOCK * 4;
        int fd0 = LibC.open(first.toString(), LibC.O_RDWR | LibC.O_CREAT, 0644);
        int fd1 = LibC.open(second.toString(), LibC.O_RDWR | LibC.O_CREAT, 0644);
        try (Arena arena = Arena.ofShared()) {
            LibC.fallocate(fd0, 0, bytes, first.toString());
            LibC.fallocate(fd1, 0, bytes, second.toString());
            MemorySegment region = arena.allocate(4 * BLOCK, 4096);
            Patterns.fill(region.asSlice(0, 2 * BLOCK), 21);
            try (NixlFileCopier copier = new NixlFileCopier(
                    "kvstore-files-shared", "POSIX", Nixl.DRAM_SEG, region, 0, Duration.ofSeconds(60))) {
                NixlFileCopier.File a = copier.register(fd0, bytes);
                NixlFileCopier.File b = copier.register(fd1, bytes);
                assertThat(copier.register(fd0, bytes)).isEqualTo(a);
                assertThat(copier.files()).as("each descriptor registered once").isEqualTo(2);
                // memory block 0 to the first file's block 3, memory block 1 to the second file's block 0
                assertThat(copier.write(a, List.of(new TransferSpan(0, 3 * BLOCK, BLOCK))))
                        .isEqualTo(BLOCK);
                assertThat(copier.write(b, List.of(new TransferSpan(BLOCK, 0, BLOCK))))
                        .isEqualTo(BLOCK);
                assertThat(fileBytes(first, 3 * BLOCK, BLOCK))
                        .isEqualTo(region.asSlice(0, BLOCK).asByteBuffer());
                assertThat(fileBytes(second, 0, BLOCK))
                        .isEqualTo(region.asSlice(BLOCK, BLOCK).asByteBuffer());
                // and back, crosswise, into the region's other half
                assertThat(copier.read(b, List.of(new TransferSpan(2 * BLOCK, 0, BLOCK))))
                        .isEqualTo(BLOCK);
                assertThat(copier.read(a, List.of(new TransferSpan(3 * BLOCK, 3 * BLOCK, BLOCK))))
                        .isEqualTo(BLOCK);
                assertThat(region.asSlice(2 * BLOCK, BLOCK).mismatch(region.asSlice(BLOCK, BLOCK)))
                        .isEqualTo(-1);
                assertThat(region.asSlice(3 * BLOCK, BLOCK).mismatch(region.asSlice(0, BLOCK)))
                        .isEqualTo(-1);
                assertThatThrownBy(() -> copier.read(
                                new NixlFileCopier.File(fd1 + 1000, bytes), List.of(new TransferSpan(0, 0, BLOCK))))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("not registered");
            }
        } finally {
            LibC.close(fd0);
            LibC.close(fd1);
        }
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
                    "kvstore-gds-copier", "GDS", Nixl.VRAM_SEG, device.region(), 0, Duration.ofSeconds(60))) {
                NixlFileCopier.File file = copier.register(fd, bytes);
                assertThat(copier.write(file, List.of(new TransferSpan(0, 0, bytes))))
                        .isEqualTo(bytes);
                assertThat(fileBytes(path, 0, bytes)).isEqualTo(host.asByteBuffer());
                assertThat(copier.read(file, List.of(new TransferSpan(bytes, 0, bytes))))
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
