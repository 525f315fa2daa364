package io.kvstore.ffm.cuda;

/**
 * What kvstore reports about one GPU: its name, compute capability, SM count, PCI location and
 * memory, read through attributes so no release-specific struct layout is assumed.
 */
public record CudaDeviceProperties(
        int device,
        String name,
        int computeMajor,
        int computeMinor,
        int multiprocessors,
        int pciBus,
        int pciDevice,
        long totalMemory,
        long freeMemory) {

    @Override
    public String toString() {
        return "GPU " + device + " " + name + " (sm_" + computeMajor + computeMinor + ", " + multiprocessors
                + " SMs, PCI "
                + String.format("%02x:%02x", pciBus, pciDevice) + ", " + (totalMemory >> 20) + " MiB, "
                + (freeMemory >> 20) + " MiB free)";
    }
}
