package io.kvstore.bench.gpu;

import io.kvstore.ffm.cuda.CudaRuntime;
import io.kvstore.ffm.cuda.CudaRuntime.CopyKind;
import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.ffm.cufile.CuFileHandle;
import io.kvstore.ffm.libc.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The device tier's two ways to NVMe, timed in one run on a GPU machine: cuFile straight between VRAM
 * and an O_DIRECT file (what {@code CuFileDeviceFileCopier} does per block), and the route through pinned
 * host memory (cudaMemcpy, then pwrite/pread with O_DIRECT), beside the references that bound them: the
 * same O_DIRECT file I/O from pinned host memory with no GPU in it, and the host/device copies alone.
 * One block per call, in file order, over a working set far larger than any cache; the file is made
 * durable (fdatasync) at the end of each write pass and counted in it. The bytes read back through
 * cuFile are checked against the source. Usage: GdsLoad DIR [BLOCK_MIB] [TOTAL_MIB] [ROUNDS]; prints a
 * markdown table of GB/s (1e9 bytes), median and best of the rounds.
 */
public final class GdsLoad {

    private GdsLoad() {}

    /** One pass over the working set. */
    private interface Pass {
        void run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Files.createDirectories(Path.of(args[0]));
        long block = (args.length > 1 ? Long.parseLong(args[1]) : 2) << 20;
        long total = (args.length > 2 ? Long.parseLong(args[2]) : 4096) << 20;
        int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 5;
        int blocks = (int) (total / block);
        CudaRuntime cuda = CudaRuntime.get();
        CuFile cufile = CuFile.get();
        System.out.println("CUDA: " + CudaRuntime.availability() + "; " + cuda.properties(0));
        System.out.println("cuFile: " + CuFile.availability());
        Path path = dir.resolve("gds-load.blocks");
        int fd = LibC.open(path.toString(), LibC.O_RDWR | LibC.O_CREAT | LibC.O_DIRECT | LibC.O_CLOEXEC, 0600);
        LibC.fallocate(fd, 0, total, path.toString());
        cufile.driverOpen();
        MemorySegment vram = cuda.malloc(total);
        MemorySegment pinned = cuda.hostAlloc(total, CudaRuntime.HOST_ALLOC_PORTABLE_MAPPED);
        try (Arena arena = Arena.ofConfined();
                CuFileHandle handle = cufile.register(fd, path.toString())) {
            MemorySegment source = arena.allocate(total, 4096);
            long x = 0x9E3779B97F4A7C15L;
            for (long o = 0; o < total; o += 8) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
                source.set(ValueLayout.JAVA_LONG, o, x);
            }
            cuda.memcpy(vram, source, total, CopyKind.HOST_TO_DEVICE);
            MemorySegment staging = pinned.asSlice(0, block);
            String name = path.toString();
            Pass cufileWrite = () -> {
                for (int b = 0; b < blocks; b++) {
                    cufile.write(handle, vram, block, b * block, b * block);
                }
                LibC.fdatasync(fd, name);
            };
            Pass cufileRead = () -> {
                for (int b = 0; b < blocks; b++) {
                    cufile.read(handle, vram, block, b * block, b * block);
                }
            };
            Pass viaHostWrite = () -> {
                for (int b = 0; b < blocks; b++) {
                    cuda.memcpy(staging, vram.asSlice(b * block, block), block, CopyKind.DEVICE_TO_HOST);
                    LibC.pwriteFully(fd, staging, b * block, name);
                }
                LibC.fdatasync(fd, name);
            };
            Pass viaHostRead = () -> {
                for (int b = 0; b < blocks; b++) {
                    LibC.preadFully(fd, staging, b * block, name);
                    cuda.memcpy(vram.asSlice(b * block, block), staging, block, CopyKind.HOST_TO_DEVICE);
                }
            };
            Pass hostWrite = () -> {
                for (int b = 0; b < blocks; b++) {
                    LibC.pwriteFully(fd, pinned.asSlice(b * block, block), b * block, name);
                }
                LibC.fdatasync(fd, name);
            };
            Pass hostRead = () -> {
                for (int b = 0; b < blocks; b++) {
                    LibC.preadFully(fd, pinned.asSlice(b * block, block), b * block, name);
                }
            };
            Pass toHost = () -> copyBlocks(cuda, pinned, vram, blocks, block, CopyKind.DEVICE_TO_HOST);
            Pass toDevice = () -> copyBlocks(cuda, vram, pinned, blocks, block, CopyKind.HOST_TO_DEVICE);
            String[] names = {
                "cuFile write (VRAM -> file)", "cuFile read (file -> VRAM)",
                "via pinned host, write", "via pinned host, read",
                "O_DIRECT write from pinned host (no GPU)", "O_DIRECT read into pinned host (no GPU)",
                "cudaMemcpy VRAM -> pinned host", "cudaMemcpy pinned host -> VRAM"
            };
            Pass[] passes = {cufileWrite, cufileRead, viaHostWrite, viaHostRead, hostWrite, hostRead, toHost, toDevice};
            double[][] seconds = new double[passes.length][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int p = 0; p < passes.length; p++) {
                    if (p == 0 || p == 2) { // each write pass starts from the source's bytes in VRAM
                        cuda.memcpy(vram, source, total, CopyKind.HOST_TO_DEVICE);
                    }
                    long start = System.nanoTime();
                    passes[p].run();
                    seconds[p][r] = (System.nanoTime() - start) / 1e9;
                    if (p == 1) { // what cuFile read back is what was written
                        cuda.memset(vram.asSlice(0, block), 0, block);
                        cufileRead.run();
                        cuda.memcpy(pinned, vram, total, CopyKind.DEVICE_TO_HOST);
                        if (crc(pinned) != crc(source)) {
                            throw new IllegalStateException("cuFile read back other bytes than were written");
                        }
                    }
                }
            }
            System.out.printf(
                    "%n%d blocks of %d MiB (%d MiB), %d rounds, one block per call%n%n",
                    blocks, block >> 20, total >> 20, rounds);
            System.out.println("| path | GB/s, median | GB/s, best |");
            System.out.println("|---|---|---|");
            for (int p = 0; p < passes.length; p++) {
                double[] s = seconds[p].clone();
                Arrays.sort(s);
                System.out.printf(
                        "| %s | %.2f | %.2f |%n", names[p], total / s[s.length / 2] / 1e9, total / s[0] / 1e9);
            }
        } finally {
            cuda.free(vram);
            cuda.freeHost(pinned);
            LibC.close(fd);
            cufile.driverClose();
            Files.deleteIfExists(path);
        }
    }

    /** Copies the working set block by block, one cudaMemcpy a block, as the tier moves blocks. */
    private static void copyBlocks(
            CudaRuntime cuda, MemorySegment to, MemorySegment from, int blocks, long block, CopyKind kind) {
        for (int b = 0; b < blocks; b++) {
            cuda.memcpy(to.asSlice(b * block, block), from.asSlice(b * block, block), block, kind);
        }
    }

    private static long crc(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        for (long at = 0; at < segment.byteSize(); at += 1L << 30) { // a ByteBuffer holds under 2 GiB
            crc.update(segment.asSlice(at, Math.min(1L << 30, segment.byteSize() - at))
                    .asByteBuffer());
        }
        return crc.getValue();
    }
}
