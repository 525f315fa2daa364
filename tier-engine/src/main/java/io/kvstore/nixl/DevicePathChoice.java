package io.kvstore.nixl;

import io.kvstore.ffm.Availability;
import java.util.List;

/**
 * How the device (HBM) tier's memory meets NIXL and storage, decided once at start-up from the
 * {@code DYN_KVBM_NIXL_BACKEND_*} selection ({@link NixlBackendSelection.Resolved}) and what loads here:
 *
 * <ul>
 *   <li>whether the tier's device region is registered with the service's NIXL agent as {@code VRAM_SEG}
 *       (so an engine's agent can READ and WRITE it): only when the tier is CUDA-backed (emulated device
 *       memory is host memory and is never passed off as VRAM) and the one-sided data plane is a NIXL agent;
 *   <li>which path moves blocks between the tier and NVMe: NIXL's {@code GDS_MT} or {@code GDS} backend
 *       ({@code VRAM_SEG} to {@code FILE_SEG}) when that flag is on and its plugin loads, else cuFile
 *       directly when a GDS flag is on and libcufile loads, else through host memory (device to pinned DRAM
 *       by CUDA copy, then the NVMe tier's O_DIRECT path).
 * </ul>
 *
 * A pure function of its inputs, so every rule is table-tested on CPU; the reason of each decision is
 * kept for the start-up log and health.
 */
public final class DevicePathChoice {

    /** The NIXL backends that move device memory to files, preferred first (the multi-threaded one). */
    static final List<String> GDS_BACKENDS = List.of("GDS_MT", "GDS");

    private DevicePathChoice() {}

    /** How blocks move between the device tier and NVMe. */
    public enum StoragePath {
        /** A NIXL agent's GDS_MT backend: VRAM_SEG to FILE_SEG, DMA between NVMe and VRAM. */
        NIXL_GDS_MT,
        /** A NIXL agent's GDS backend. */
        NIXL_GDS,
        /** libcufile directly ({@code GdsCopier}): DMA between NVMe and VRAM without NIXL. */
        CUFILE,
        /** Device to pinned host memory by CUDA copy, then the NVMe tier's own O_DIRECT path. */
        THROUGH_HOST
    }

    /**
     * The decision.
     *
     * @param registerVram whether to register the device region with the NIXL agent as VRAM_SEG
     * @param vramWhy why or why not
     * @param storage the device tier's path to and from NVMe
     * @param storageWhy why that path
     */
    public record Decision(boolean registerVram, String vramWhy, StoragePath storage, String storageWhy) {

        /** The NIXL backend that {@link #storage()} names ({@code GDS_MT} or {@code GDS}), or null. */
        public String nixlBackend() {
            return switch (storage) {
                case NIXL_GDS_MT -> "GDS_MT";
                case NIXL_GDS -> "GDS";
                case CUFILE, THROUGH_HOST -> null;
            };
        }

        /** One line for the start-up log and health. */
        public String summary() {
            return "device tier: " + (registerVram ? "registered as VRAM_SEG" : "not registered with NIXL") + " ("
                    + vramWhy + "); to and from NVMe via " + storage + " (" + storageWhy + ")";
        }
    }

    /**
     * Decides.
     *
     * @param cudaBacked whether the device tier's memory is real device memory (cudaMalloc), not emulated
     * @param nixlDataPlane whether the one-sided data plane runs on a NIXL agent
     * @param backends the resolved {@code DYN_KVBM_NIXL_BACKEND_*} selection (enabled and usable backends,
     *     and the probe answer of every enabled one)
     * @param cufile whether libcufile loads here, or why not
     */
    public static Decision decide(
            boolean cudaBacked, boolean nixlDataPlane, NixlBackendSelection.Resolved backends, Availability cufile) {
        boolean registerVram;
        String vramWhy;
        if (!cudaBacked) {
            registerVram = false;
            vramWhy = "its memory is emulated (host memory), never registered as VRAM";
        } else if (!nixlDataPlane) {
            registerVram = false;
            vramWhy = "the one-sided data plane is not a NIXL agent";
        } else {
            registerVram = true;
            vramWhy = "CUDA device memory and a NIXL data plane";
        }
        if (!cudaBacked) {
            return new Decision(
                    registerVram,
                    vramWhy,
                    StoragePath.THROUGH_HOST,
                    "emulated device memory has no DMA path to storage; host memory and O_DIRECT");
        }
        StringBuilder skipped = new StringBuilder();
        for (String name : GDS_BACKENDS) {
            if (backends.enabled().contains(name)) {
                return new Decision(
                        registerVram,
                        vramWhy,
                        name.equals("GDS_MT") ? StoragePath.NIXL_GDS_MT : StoragePath.NIXL_GDS,
                        "DYN_KVBM_NIXL_BACKEND_" + name + " is on and its plugin loads");
            }
            Availability probed = backends.availability().get(name);
            if (probed != null) {
                skipped.append(skipped.isEmpty() ? "" : "; ")
                        .append(name)
                        .append(" is on but unusable: ")
                        .append(probed.detail());
            }
        }
        if (skipped.isEmpty()) {
            return new Decision(
                    registerVram,
                    vramWhy,
                    StoragePath.THROUGH_HOST,
                    "neither DYN_KVBM_NIXL_BACKEND_GDS nor _GDS_MT is on; host memory and O_DIRECT");
        }
        if (cufile.available()) {
            return new Decision(
                    registerVram, vramWhy, StoragePath.CUFILE, skipped + "; libcufile directly: " + cufile.detail());
        }
        return new Decision(
                registerVram,
                vramWhy,
                StoragePath.THROUGH_HOST,
                skipped + "; libcufile unavailable (" + cufile.detail() + "); host memory and O_DIRECT");
    }
}
