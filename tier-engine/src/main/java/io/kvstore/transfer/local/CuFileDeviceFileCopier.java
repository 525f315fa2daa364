package io.kvstore.transfer.local;

import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.ffm.cufile.CuFileHandle;
import io.kvstore.tier.nvme.DeviceFileCopier;
import io.kvstore.transfer.TransferSpan;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The device tier's blocks to and from the NVMe tier's files with cuFile (GPUDirect Storage) directly,
 * the path chosen when a GDS flag is on but NIXL's GDS plugins are not usable: the device region is
 * registered once with {@code cuFileBufRegister}, each block file with {@code cuFileHandleRegister} the
 * first time a block goes to or from it, and {@link GdsCopier} makes the calls. Not verified on a GPU in
 * this project's CI (its test skips without one; see the README's status row).
 */
public final class CuFileDeviceFileCopier implements DeviceFileCopier {

    private final CuFile cufile;
    private final MemorySegment region;
    private final GdsCopier copier;
    private final Map<BlockFile, CuFileHandle> handles = new ConcurrentHashMap<>();

    /**
     * Opens the cuFile driver and registers {@code deviceRegion} (the base of a {@code cudaMalloc}
     * allocation: the device tier's region).
     */
    public CuFileDeviceFileCopier(CuFile cufile, MemorySegment deviceRegion) {
        this.cufile = cufile;
        this.region = deviceRegion;
        this.copier = new GdsCopier(cufile);
        cufile.driverOpen();
        try {
            cufile.registerBuffer(deviceRegion, 0);
        } catch (RuntimeException e) {
            cufile.driverClose();
            throw e;
        }
    }

    @Override
    public String name() {
        return "cuFile";
    }

    @Override
    public boolean standIn() {
        return false;
    }

    @Override
    public void write(long deviceOffset, BlockFile file, long fileOffset, long length) throws IOException {
        try {
            copier.write(region, handle(file), List.of(new TransferSpan(deviceOffset, fileOffset, length)));
        } catch (RuntimeException e) {
            throw new IOException(
                    "cuFile write of " + length + " bytes to " + file.path() + " at " + fileOffset + " failed: "
                            + e.getMessage(),
                    e);
        }
    }

    @Override
    public void read(BlockFile file, long fileOffset, long deviceOffset, long length) throws IOException {
        try {
            copier.read(handle(file), region, List.of(new TransferSpan(deviceOffset, fileOffset, length)));
        } catch (RuntimeException e) {
            throw new IOException(
                    "cuFile read of " + length + " bytes from " + file.path() + " at " + fileOffset + " failed: "
                            + e.getMessage(),
                    e);
        }
    }

    private CuFileHandle handle(BlockFile file) {
        return handles.computeIfAbsent(file, f -> cufile.register(f.fd(), f.path()));
    }

    @Override
    public void close() {
        try {
            handles.values().forEach(CuFileHandle::close);
            handles.clear();
            cufile.deregisterBuffer(region);
        } finally {
            cufile.driverClose();
        }
    }
}
