package io.kvstore.transfer.nixl;

import io.kvstore.tier.nvme.DeviceFileCopier;
import io.kvstore.transfer.TransferSpan;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToLongFunction;

/**
 * The device tier's blocks to and from the NVMe tier's files through a NIXL storage backend: {@code
 * GDS_MT} or {@code GDS} with the region as {@code VRAM_SEG} (GPUDirect Storage, the path chosen when
 * that flag is on and its plugin loads). One NIXL agent ({@link NixlFileCopier}) for the whole tier: the
 * region is registered with it once, when the copier is made, and each block file the first time a block
 * goes to or from it (a NIXL file registration names one file descriptor). With {@code POSIX} and {@code
 * DRAM_SEG} the same class moves host memory, which is how it is tested without a GPU.
 */
public final class NixlDeviceFileCopier implements DeviceFileCopier {

    private static final AtomicInteger AGENTS = new AtomicInteger();

    private final String backend;
    private final NixlFileCopier copier;

    /**
     * @param backend {@code GDS_MT}, {@code GDS} (or {@code POSIX} for host memory)
     * @param memoryType {@code Nixl.VRAM_SEG} for the device tier's memory ({@code DRAM_SEG} with POSIX)
     * @param region the device tier's region
     * @param deviceId the GPU ordinal of the region
     * @throws IllegalStateException when NIXL is unavailable, naming why
     * @throws io.kvstore.ffm.nixl.NixlException when the backend cannot be created or the region not registered
     */
    public NixlDeviceFileCopier(String backend, int memoryType, MemorySegment region, long deviceId, Duration timeout) {
        this.backend = backend;
        this.copier = new NixlFileCopier(
                "kvstore-files-" + ProcessHandle.current().pid() + "-" + AGENTS.incrementAndGet(),
                backend,
                memoryType,
                region,
                deviceId,
                timeout);
    }

    /** The name of the one NIXL agent that moves this tier's blocks, whatever their file. */
    public String agentName() {
        return copier.agentName();
    }

    /** How many block files are registered with the agent. */
    public int registeredFiles() {
        return copier.files();
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
                f -> copier.write(f, List.of(new TransferSpan(deviceOffset, fileOffset, length))));
    }

    @Override
    public void read(BlockFile file, long fileOffset, long deviceOffset, long length) throws IOException {
        move(
                "read",
                file,
                fileOffset,
                length,
                f -> copier.read(f, List.of(new TransferSpan(deviceOffset, fileOffset, length))));
    }

    /** Runs one request on the file's copier; its failure as an IOException naming the request. */
    private void move(
            String what, BlockFile file, long fileOffset, long length, ToLongFunction<NixlFileCopier.File> request)
            throws IOException {
        long moved;
        try {
            moved = request.applyAsLong(registered(file));
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

    /** The block file as registered with the agent (registered on its first move; the copier keeps it). */
    private NixlFileCopier.File registered(BlockFile file) {
        return copier.register(file.fd(), file.size());
    }

    @Override
    public void close() {
        copier.close();
    }
}
