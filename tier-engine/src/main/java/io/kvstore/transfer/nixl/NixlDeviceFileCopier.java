package io.kvstore.transfer.nixl;

import io.kvstore.tier.nvme.DeviceFileCopier;
import io.kvstore.transfer.TransferSpan;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToLongFunction;

/**
 * The device tier's blocks to and from the NVMe tier's files through a NIXL storage backend: {@code
 * GDS_MT} or {@code GDS} with the region as {@code VRAM_SEG} (GPUDirect Storage, the path chosen when
 * that flag is on and its plugin loads). One {@link NixlFileCopier} per block file, made the first time a
 * block goes to or from that file (a NIXL registration names one file descriptor). With {@code POSIX} and
 * {@code DRAM_SEG} the same class moves host memory, which is how it is tested without a GPU.
 */
public final class NixlDeviceFileCopier implements DeviceFileCopier {

    private static final AtomicInteger AGENTS = new AtomicInteger();

    private final String backend;
    private final int memoryType;
    private final MemorySegment region;
    private final long deviceId;
    private final Duration timeout;
    private final Map<BlockFile, NixlFileCopier> files = new ConcurrentHashMap<>();

    /**
     * @param backend {@code GDS_MT}, {@code GDS} (or {@code POSIX} for host memory)
     * @param memoryType {@code Nixl.VRAM_SEG} for the device tier's memory ({@code DRAM_SEG} with POSIX)
     * @param region the device tier's region
     * @param deviceId the GPU ordinal of the region
     */
    public NixlDeviceFileCopier(String backend, int memoryType, MemorySegment region, long deviceId, Duration timeout) {
        this.backend = backend;
        this.memoryType = memoryType;
        this.region = region;
        this.deviceId = deviceId;
        this.timeout = timeout;
    }

    @Override
    public String name() {
        return "NIXL " + backend;
    }

    @Override
    public boolean standIn() {
        return false;
    }

    @Override
    public void write(long deviceOffset, BlockFile file, long fileOffset, long length) throws IOException {
        move(
                "write",
                file,
                fileOffset,
                length,
                c -> c.write(List.of(new TransferSpan(deviceOffset, fileOffset, length))));
    }

    @Override
    public void read(BlockFile file, long fileOffset, long deviceOffset, long length) throws IOException {
        move(
                "read",
                file,
                fileOffset,
                length,
                c -> c.read(List.of(new TransferSpan(deviceOffset, fileOffset, length))));
    }

    /** Runs one request on the file's copier; its failure as an IOException naming the request. */
    private void move(String what, BlockFile file, long fileOffset, long length, ToLongFunction<NixlFileCopier> request)
            throws IOException {
        long moved;
        try {
            moved = request.applyAsLong(copier(file));
        } catch (RuntimeException e) {
            throw new IOException(
                    "NIXL " + backend + " " + what + " of " + length + " bytes at " + fileOffset + " of " + file.path()
                            + " failed: " + e.getMessage(),
                    e);
        }
        if (moved != length) {
            throw new IOException("NIXL " + backend + " " + what + " at " + fileOffset + " of " + file.path()
                    + " moved " + moved + " of " + length + " bytes");
        }
    }

    private NixlFileCopier copier(BlockFile file) {
        return files.computeIfAbsent(
                file,
                f -> new NixlFileCopier(
                        "kvstore-files-" + ProcessHandle.current().pid() + "-" + AGENTS.incrementAndGet(),
                        backend,
                        memoryType,
                        region,
                        deviceId,
                        f.fd(),
                        f.size(),
                        timeout));
    }

    @Override
    public void close() {
        files.values().forEach(NixlFileCopier::close);
        files.clear();
    }
}
