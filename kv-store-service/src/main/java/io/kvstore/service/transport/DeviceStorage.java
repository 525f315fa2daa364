package io.kvstore.service.transport;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.ffm.libc.LibC;
import io.kvstore.ffm.libc.PosixException;
import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.nixl.DevicePathChoice;
import io.kvstore.nixl.DevicePathChoice.StoragePath;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.nvme.DeviceFileCopier;
import io.kvstore.transfer.local.CuFileDeviceFileCopier;
import io.kvstore.transfer.nixl.NixlDeviceFileCopier;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The device (HBM) tier's path to NVMe as the service runs it: the copier {@link DevicePathChoice} names
 * (NIXL {@code GDS_MT}/{@code GDS}, else cuFile), opened for the tier's device memory and handed to the
 * engine, which then moves blocks between HBM and NVMe without host memory; or none, and blocks go through
 * DRAM. What was decided and what the engine does are shown in health and {@code GET /admin/backends}.
 */
public final class DeviceStorage {

    private static final Logger log = LoggerFactory.getLogger(DeviceStorage.class);

    private DeviceStorage() {}

    /**
     * The device path as operators see it.
     *
     * @param hbm the HBM tier's memory ({@code cuda-device}, an emulated provider, or {@code none})
     * @param storage the decided path ({@code NIXL_GDS_MT}, {@code NIXL_GDS}, {@code CUFILE}, {@code
     *     THROUGH_HOST}); null without an HBM tier
     * @param reason why that path
     * @param route what the engine does with it
     * @param vramRegistered whether the HBM region is registered with the NIXL agent as VRAM_SEG
     * @param vramReason why or why not
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record View(
            String hbm, String storage, String reason, String route, Boolean vramRegistered, String vramReason) {

        public static View noHbm() {
            return new View(
                    "none",
                    null,
                    "no HBM tier is configured (kvstore.tiers.hbm)",
                    "no HBM tier; DRAM demotes to NVMe through host memory",
                    null,
                    null);
        }

        /** This view with {@code route} as what the engine does. */
        public View withRoute(String route) {
            return new View(hbm, storage, reason, route, vramRegistered, vramReason);
        }

        public static View of(String hbm, DevicePathChoice.Decision d, String route) {
            return new View(hbm, d.storage().name(), d.storageWhy(), route, d.registerVram(), d.vramWhy());
        }
    }

    /** A copier for the engine (null: through host memory) and the route words for {@link View#route}. */
    public record Opened(DeviceFileCopier copier, String route) {}

    public static final String THROUGH_DRAM = "HBM demotes to DRAM and DRAM to NVMe, through host memory";

    /**
     * Opens the copier {@code decision} names for {@code hbm}'s device memory and {@link #probe}s it in each
     * of {@code nvmeDirs} (the NVMe tier's directories; empty without an NVMe tier). Through host memory (a
     * null copier) when the decision is {@code THROUGH_HOST}, when there is no NVMe tier, or when the copier
     * cannot be opened or fails its probe in any directory (one WARN line with the reason).
     */
    public static Opened open(DevicePathChoice.Decision decision, DeviceTier hbm, List<Path> nvmeDirs) {
        if (decision.storage() == StoragePath.THROUGH_HOST) {
            return new Opened(null, THROUGH_DRAM);
        }
        if (nvmeDirs.isEmpty()) {
            return new Opened(null, "no NVMe tier (kvstore.tiers.nvme.enabled=false); HBM demotes to DRAM");
        }
        try {
            DeviceFileCopier copier = decision.storage() == StoragePath.CUFILE
                    ? new CuFileDeviceFileCopier(CuFile.get(), hbm.region())
                    : new NixlDeviceFileCopier(
                            decision.nixlBackend(), Nixl.VRAM_SEG, hbm.region(), 0, Duration.ofSeconds(60));
            try {
                probe(copier, nvmeDirs);
            } catch (IOException | RuntimeException e) {
                copier.close();
                throw new IllegalStateException("its start-up probe failed: " + e.getMessage(), e);
            }
            return new Opened(copier, null);
        } catch (RuntimeException e) {
            log.warn(
                    "device tier: {} could not be opened ({}); HBM demotes through DRAM instead",
                    decision.storage(),
                    e.getMessage());
            return new Opened(
                    null, decision.storage() + " could not be opened (" + e.getMessage() + "); " + THROUGH_DRAM);
        }
    }

    /**
     * {@link #probe(DeviceFileCopier, Path)} in each directory: block files live in all of them, and a drive
     * GPUDirect Storage cannot reach (another filesystem, a device cuFile cannot describe) fails here by name
     * rather than at run time, where the engine would move its blocks through host memory.
     */
    public static void probe(DeviceFileCopier copier, List<Path> dirs) throws IOException {
        for (Path dir : dirs) {
            try {
                probe(copier, dir);
            } catch (IOException | RuntimeException e) {
                throw new IOException("in " + dir + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * Moves one 4 KiB slot from the start of the device region to a scratch file in {@code dir} (O_DIRECT
     * where the filesystem allows) and back, before the tier holds any block: a file the driver cannot
     * register or a filesystem GPUDirect Storage does not support fails here, at start-up, instead of on
     * the first demotion (a NIXL backend that cannot be created already failed when the copier was made).
     */
    public static void probe(DeviceFileCopier copier, Path dir) throws IOException {
        Files.createDirectories(dir);
        Path scratch = dir.resolve(".device-storage-probe");
        int fd;
        try {
            fd = LibC.open(scratch.toString(), LibC.O_RDWR | LibC.O_CREAT | LibC.O_CLOEXEC | LibC.O_DIRECT, 0600);
        } catch (PosixException e) {
            if (e.errno() != LibC.EINVAL) {
                throw e;
            }
            fd = LibC.open(scratch.toString(), LibC.O_RDWR | LibC.O_CREAT | LibC.O_CLOEXEC, 0600);
        }
        try {
            LibC.fallocate(fd, 0, PROBE_BYTES, scratch.toString());
            DeviceFileCopier.BlockFile file = new DeviceFileCopier.BlockFile(fd, scratch.toString(), PROBE_BYTES);
            copier.write(0, file, 0, PROBE_BYTES);
            copier.read(file, 0, 0, PROBE_BYTES);
        } finally {
            LibC.close(fd);
            Files.deleteIfExists(scratch);
        }
    }

    private static final long PROBE_BYTES = 4096;

    /** The route of an engine that took a copier: HBM and NVMe straight to each other. */
    public static String direct(String engineRoute) {
        return "HBM demotes straight to NVMe and NVMe hits promote straight to HBM via " + engineRoute;
    }
}
