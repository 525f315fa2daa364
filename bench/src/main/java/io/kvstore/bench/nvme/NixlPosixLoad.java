package io.kvstore.bench.nvme;

import io.kvstore.ffm.libc.LibC;
import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.ffm.nixl.NixlAgent;
import io.kvstore.ffm.nixl.NixlBackend;
import io.kvstore.ffm.nixl.NixlDescriptor;
import io.kvstore.ffm.nixl.NixlRegistration;
import io.kvstore.ffm.nixl.NixlTransfer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32C;

/**
 * The NVMe tier's file I/O two ways, on one O_DIRECT file: the tier's own path (pwrite/pread from
 * DEPTH I/O threads, as {@code BlockFiles} does) and NIXL's POSIX backend (one transfer request of DEPTH
 * DRAM_SEG -> FILE_SEG descriptors per batch, NIXL's own queue underneath). Sequential blocks in batches
 * of DEPTH, one fdatasync after all writes (the same for both), reads verified by CRC32C.
 * Usage: NixlPosixLoad DIR BLOCK_BYTES DEPTH TOTAL_BYTES. Prints: "direct_write direct_read nixl_write
 * nixl_read" in MB/s, and the POSIX plugin's parameters on stderr. {@code -Dposix.params=k=v,...} passes
 * backend parameters (e.g. {@code use_uring=true}).
 */
public final class NixlPosixLoad {

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int block = Integer.parseInt(args[1]);
        int depth = Integer.parseInt(args[2]);
        long total = Long.parseLong(args[3]) / block * block;
        Files.createDirectories(dir);
        Path file = dir.resolve("nixl-posix-bench.dat");
        int flags = LibC.O_RDWR | LibC.O_CREAT | LibC.O_CLOEXEC | LibC.O_DIRECT;
        int fd = LibC.open(file.toString(), flags, 0644);
        try (Arena arena = Arena.ofShared()) {
            LibC.fallocate(fd, 0, total, file.toString());
            List<MemorySegment> sources = new ArrayList<>();
            List<MemorySegment> targets = new ArrayList<>();
            for (int i = 0; i < depth; i++) {
                MemorySegment s = arena.allocate(block, 4096);
                for (long o = 0; o < block; o += 8) {
                    s.set(ValueLayout.JAVA_LONG, o, o * 31 + i);
                }
                sources.add(s);
                targets.add(arena.allocate(block, 4096));
            }
            long[] crcs = sources.stream().mapToLong(NixlPosixLoad::crc).toArray();
            double[] direct = direct(fd, file, block, depth, total, sources, targets, crcs);
            double[] nixl = nixl(fd, file, block, depth, total, sources, targets, crcs);
            System.out.printf("%.0f %.0f %.0f %.0f%n", direct[0], direct[1], nixl[0], nixl[1]);
        } finally {
            LibC.close(fd);
            Files.deleteIfExists(file);
        }
    }

    private static double[] direct(
            int fd,
            Path file,
            int block,
            int depth,
            long total,
            List<MemorySegment> sources,
            List<MemorySegment> targets,
            long[] crcs)
            throws Exception {
        String path = file.toString();
        try (ExecutorService io = Executors.newFixedThreadPool(depth)) {
            long start = System.nanoTime();
            for (long off = 0; off < total; off += (long) block * depth) {
                pio(io, true, sources, off, block, depth, total, fd, path);
            }
            LibC.fdatasync(fd, path);
            double write = total / 1e6 / ((System.nanoTime() - start) / 1e9);
            start = System.nanoTime();
            for (long off = 0; off < total; off += (long) block * depth) {
                int n = pio(io, false, targets, off, block, depth, total, fd, path);
                verify(targets, crcs, n);
            }
            return new double[] {write, total / 1e6 / ((System.nanoTime() - start) / 1e9)};
        }
    }

    /** One batch on the tier's own path: buffer i <-> the file at off + i * block, one I/O thread each. */
    private static int pio(
            ExecutorService io,
            boolean write,
            List<MemorySegment> buffers,
            long off,
            int block,
            int depth,
            long total,
            int fd,
            String path)
            throws Exception {
        List<Future<?>> batch = new ArrayList<>();
        for (int i = 0; i < depth && off + (long) i * block < total; i++) {
            long at = off + (long) i * block;
            MemorySegment buffer = buffers.get(i);
            batch.add(io.submit(() -> {
                if (write) {
                    LibC.pwriteFully(fd, buffer, at, path);
                } else {
                    LibC.preadFully(fd, buffer, at, path);
                }
                return null;
            }));
        }
        for (Future<?> f : batch) {
            f.get();
        }
        return batch.size();
    }

    private static double[] nixl(
            int fd,
            Path file,
            int block,
            int depth,
            long total,
            List<MemorySegment> sources,
            List<MemorySegment> targets,
            long[] crcs)
            throws Exception {
        try (NixlAgent agent = Nixl.get().createAgent("kvstore-posix-bench", new NixlAgent.Config(false, 0))) {
            System.err.println("POSIX plugin: " + agent.pluginParams("POSIX"));
            List<NixlDescriptor> memory = new ArrayList<>();
            for (int i = 0; i < depth; i++) {
                memory.add(new NixlDescriptor(sources.get(i).address(), block, 0));
                memory.add(new NixlDescriptor(targets.get(i).address(), block, 0));
            }
            Map<String, String> params = new java.util.TreeMap<>();
            for (String kv : System.getProperty("posix.params", "").split(",")) {
                if (kv.contains("=")) {
                    params.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
                }
            }
            System.err.println("POSIX backend parameters: " + params);
            try (NixlBackend posix = agent.createBackend("POSIX", params);
                    NixlRegistration mem = agent.register(Nixl.DRAM_SEG, memory, posix);
                    NixlRegistration files =
                            agent.register(Nixl.FILE_SEG, List.of(new NixlDescriptor(0, total, fd)), posix)) {
                long start = System.nanoTime();
                for (long off = 0; off < total; off += (long) block * depth) {
                    move(agent, posix, Nixl.XFER_WRITE, sources, off, block, depth, total, fd);
                }
                LibC.fdatasync(fd, file.toString());
                double write = total / 1e6 / ((System.nanoTime() - start) / 1e9);
                start = System.nanoTime();
                for (long off = 0; off < total; off += (long) block * depth) {
                    int n = move(agent, posix, Nixl.XFER_READ, targets, off, block, depth, total, fd);
                    verify(targets, crcs, n);
                }
                return new double[] {write, total / 1e6 / ((System.nanoTime() - start) / 1e9)};
            }
        }
    }

    /** One NIXL request for a batch: buffer i <-> the file at off + i * block. */
    private static int move(
            NixlAgent agent,
            NixlBackend posix,
            int op,
            List<MemorySegment> buffers,
            long off,
            int block,
            int depth,
            long total,
            int fd) {
        List<NixlDescriptor> local = new ArrayList<>();
        List<NixlDescriptor> remote = new ArrayList<>();
        for (int i = 0; i < depth && off + (long) i * block < total; i++) {
            local.add(new NixlDescriptor(buffers.get(i).address(), block, 0));
            remote.add(new NixlDescriptor(off + (long) i * block, block, fd));
        }
        try (NixlTransfer t =
                agent.createTransfer(op, Nixl.DRAM_SEG, local, Nixl.FILE_SEG, remote, agent.name(), posix, null)) {
            boolean done = t.post();
            while (!done) {
                Thread.onSpinWait();
                done = t.isDone();
            }
        }
        return local.size();
    }

    private static void verify(List<MemorySegment> targets, long[] crcs, int n) {
        for (int i = 0; i < n; i++) {
            if (crc(targets.get(i)) != crcs[i]) {
                throw new IllegalStateException("block " + i + " of a batch read back with another CRC32C");
            }
        }
    }

    private static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }
}
