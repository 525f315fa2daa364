package io.kvstore.ffm.cufile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.cuda.CudaRuntime;
import io.kvstore.ffm.cuda.CudaRuntime.CopyKind;
import io.kvstore.ffm.libc.LibC;
import io.kvstore.ffm.libc.PosixException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class CuFileTest {

    private static final long BYTES = 8L << 20;

    @BeforeEach
    void printAvailability() {
        System.out.println("cuFile: " + CuFile.availability() + "; CUDA runtime: " + CudaRuntime.availability());
    }

    @Test
    void unavailableLibraryNamesEveryPlaceItLooked() {
        var availability = CuFile.availability();
        assertThat(availability.detail()).isNotBlank();
        if (availability.available()) {
            assertThat(availability.detail()).startsWith("libcufile at ");
            return;
        }
        if (availability.detail().contains("not found")) {
            for (Path dir : CuFile.searchDirs()) {
                assertThat(availability.detail())
                        .contains(dir.resolve("libcufile.so").toString())
                        .contains(dir.resolve("libcufile.so.0").toString());
            }
            assertThat(availability.detail()).contains("libcufile.so.0 (system loader paths)");
        } else {
            assertThat(availability.detail())
                    .contains("libcufile")
                    .containsAnyOf("lacks symbol", "could not be loaded");
        }
        assertThatThrownBy(CuFile::get)
                .isInstanceOf(LibraryUnavailableException.class)
                .hasMessage(availability.detail());
    }

    @Test
    void structLayoutsMatchCufileHeader() {
        // cufile.h on LP64: the union in CUfileDescr_t is pointer-aligned
        assertThat(CuFile.DESCR.byteSize()).isEqualTo(24);
        assertThat(CuFile.DESCR.byteOffset(PathElement.groupElement("handle"))).isEqualTo(8);
        assertThat(CuFile.DESCR.byteOffset(PathElement.groupElement("fs_ops"))).isEqualTo(16);
        assertThat(CuFile.ERROR.byteSize()).isEqualTo(8);
        assertThat(CuFile.IO_PARAMS.byteSize()).isEqualTo(64);
        assertThat(CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("fh"))).isEqualTo(40);
        assertThat(CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("cookie")))
                .isEqualTo(56);
        assertThat(CuFile.IO_EVENTS.byteSize()).isEqualTo(24);
        assertThat(CuFileStatus.name(-5001)).isEqualTo("CU_FILE_DRIVER_NOT_INITIALIZED");
        assertThat(CuFileStatus.name(5011)).isEqualTo("CU_FILE_CUDA_DRIVER_ERROR");
    }

    @Test
    void aFileCuFileCannotRegisterSaysWhereToLookAndTheUsualCause() {
        CuFileException refused = new CuFileException(
                "cuFileHandleRegister(fd 52, /var/tmp/blocks) failed: CU_FILE_HANDLE_NOT_REGISTERED (5027)", 5027);
        assertThat(CuFile.explained(refused))
                .hasMessageStartingWith(refused.getMessage())
                .hasMessageContaining("cufile.log")
                .hasMessageContaining("/run/udev")
                .satisfies(e -> assertThat(((CuFileException) e).error()).isEqualTo(5027));
        CuFileException other =
                new CuFileException("cuFileHandleRegister(fd 52, x) failed: CU_FILE_INVALID_VALUE", 5022);
        assertThat(CuFile.explained(other)).isSameAs(other);
    }

    private static void assumeGds() {
        assumeTrue(CuFile.availability().available(), () -> "skipped: " + CuFile.availability());
        assumeTrue(CudaRuntime.availability().available(), () -> "skipped: " + CudaRuntime.availability());
        assumeTrue(CudaRuntime.get().deviceCount() > 0, "skipped: no CUDA device");
    }

    /** A directory on a real file system (O_DIRECT needs one; /tmp may be tmpfs): KVSTORE_GDS_DIR or target/. */
    private static Path gdsDir() throws Exception {
        String dir = System.getenv("KVSTORE_GDS_DIR");
        Path base = dir != null && !dir.isBlank() ? Path.of(dir) : Path.of("target");
        Files.createDirectories(base);
        return Files.createTempDirectory(base, "cufile-test");
    }

    private static int openDirect(Path file) throws PosixException {
        try {
            return LibC.open(file.toString(), LibC.O_RDWR | LibC.O_CREAT | LibC.O_DIRECT | LibC.O_CLOEXEC, 0600);
        } catch (PosixException e) {
            assumeTrue(
                    false, () -> "skipped: " + file.getParent() + " does not take O_DIRECT files: " + e.getMessage());
            throw e;
        }
    }

    private static long crc(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        crc.update(segment.asByteBuffer());
        return crc.getValue();
    }

    private static void fill(MemorySegment segment, long seed) {
        long x = seed;
        for (long i = 0; i < segment.byteSize(); i += 8) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, i, x);
        }
    }

    @Test
    void gpuBufferWrittenToAFileReadsBackIdentical() throws Exception {
        assumeGds();
        CudaRuntime cuda = CudaRuntime.get();
        CuFile cufile = CuFile.get();
        cufile.driverOpen();
        Path file = gdsDir().resolve("blocks.bin");
        int fd = openDirect(file);
        MemorySegment device = cuda.malloc(BYTES);
        try (Arena arena = Arena.ofConfined();
                CuFileHandle handle = cufile.register(fd, file.toString())) {
            MemorySegment host = arena.allocate(BYTES, 4096);
            MemorySegment back = arena.allocate(BYTES, 4096);
            fill(host, 99);
            cufile.registerBuffer(device, 0);
            try {
                cuda.memcpy(device, host, BYTES, CopyKind.HOST_TO_DEVICE);
                assertThat(cufile.write(handle, device, BYTES, 0, 0)).isEqualTo(BYTES);
                cuda.memset(device, 0, BYTES);
                assertThat(cufile.read(handle, device, BYTES, 0, 0)).isEqualTo(BYTES);
                cuda.memcpy(back, device, BYTES, CopyKind.DEVICE_TO_HOST);
            } finally {
                cufile.deregisterBuffer(device);
            }
            assertThat(crc(back)).isEqualTo(crc(host));
            assertThat(Files.size(file)).isEqualTo(BYTES);
        } finally {
            cuda.free(device);
            LibC.close(fd);
            cufile.driverClose();
        }
    }

    @Test
    void batchOfBlockReadsAndWritesRoundTrips() throws Exception {
        assumeGds();
        CuFile cufile = CuFile.get();
        assumeTrue(cufile.hasBatchApi(), "skipped: this libcufile has no batch API");
        CudaRuntime cuda = CudaRuntime.get();
        cufile.driverOpen();
        Path file = gdsDir().resolve("batch.bin");
        int fd = openDirect(file);
        int blocks = 8;
        long block = BYTES / blocks;
        MemorySegment device = cuda.malloc(BYTES);
        try (Arena arena = Arena.ofConfined();
                CuFileHandle handle = cufile.register(fd, file.toString());
                CuFileBatch batch = cufile.batch(blocks)) {
            MemorySegment host = arena.allocate(BYTES, 4096);
            MemorySegment back = arena.allocate(BYTES, 4096);
            fill(host, 5);
            cuda.memcpy(device, host, BYTES, CopyKind.HOST_TO_DEVICE);
            List<CuFileBatch.Io> writes = new ArrayList<>();
            List<CuFileBatch.Io> reads = new ArrayList<>();
            for (int b = 0; b < blocks; b++) {
                // blocks land in the file in reverse order, so a mixed-up offset would fail the checksum
                writes.add(new CuFileBatch.Io(true, handle, device, b * block, (blocks - 1 - b) * block, block));
                reads.add(new CuFileBatch.Io(false, handle, device, b * block, (blocks - 1 - b) * block, block));
            }
            assertThat(batch.run(writes, Duration.ofSeconds(30))).containsOnly(block);
            cuda.memset(device, 0, BYTES);
            assertThat(batch.run(reads, Duration.ofSeconds(30))).containsOnly(block);
            cuda.memcpy(back, device, BYTES, CopyKind.DEVICE_TO_HOST);
            assertThat(crc(back)).isEqualTo(crc(host));
        } finally {
            cuda.free(device);
            LibC.close(fd);
            cufile.driverClose();
        }
    }

    @Test
    void readPastTheBufferIsRefusedBeforeAnyNativeCall() {
        assumeGds();
        CuFile cufile = CuFile.get();
        MemorySegment device = CudaRuntime.get().malloc(4096);
        try {
            assertThatThrownBy(() -> cufile.read(null, device, 8192, 0, 0))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("does not fit the 4096-byte buffer");
        } finally {
            CudaRuntime.get().free(device);
        }
    }
}
