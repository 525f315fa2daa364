package io.kvstore.tier.memory;

import io.kvstore.ffm.Availability;

/**
 * Where a memory tier gets its bytes: page-aligned host memory, CUDA pinned host memory, CUDA device
 * memory, host memory standing in for device memory in tests and demos ({@code emulated-device}), or host
 * memory allocated by UCX for one-sided access by engines on the same host, or host memory in a shared file that
 * local engines map ({@code host-shared}; both chosen by the service, not by name).
 * A provider is chosen by name in configuration and is never substituted silently.
 */
public sealed interface MemoryProvider
        permits HostMemoryProvider,
                EmulatedDeviceMemoryProvider,
                CudaPinnedMemoryProvider,
                CudaDeviceMemoryProvider,
                UcxSharedMemoryProvider,
                SharedFileMemoryProvider {

    /** The configuration name: {@code host}, {@code cuda-pinned}, {@code cuda-device}, {@code emulated-device}. */
    String name();

    /** Whether this provider can allocate here, and why not when it cannot. */
    Availability availability();

    /** True for host memory standing in for device memory; operators see it labelled as such. */
    default boolean emulated() {
        return false;
    }

    /**
     * True when Java may read and write the memory directly; device memory is reached only through
     * CUDA copies and transfer engines.
     */
    default boolean hostAccessible() {
        return true;
    }

    /**
     * Allocates {@code bytes} (a multiple of 4 KiB) in one region.
     *
     * @throws IllegalStateException when the provider is unavailable or the allocation fails, with the reason
     */
    MemoryRegion allocate(long bytes);

    /** The configuration names of the providers, as {@link #named} takes them. */
    java.util.List<String> NAMES = java.util.List.of(
            HostMemoryProvider.NAME,
            EmulatedDeviceMemoryProvider.NAME,
            CudaPinnedMemoryProvider.NAME,
            CudaDeviceMemoryProvider.NAME);

    /** The provider for a configuration name, with the list of valid names in the error otherwise. */
    static MemoryProvider named(String name) {
        return switch (name) {
            case HostMemoryProvider.NAME -> new HostMemoryProvider();
            case EmulatedDeviceMemoryProvider.NAME -> new EmulatedDeviceMemoryProvider();
            case CudaPinnedMemoryProvider.NAME -> new CudaPinnedMemoryProvider();
            case CudaDeviceMemoryProvider.NAME -> new CudaDeviceMemoryProvider();
            default ->
                throw new IllegalArgumentException(
                        "unknown memory provider '" + name + "'; expected one of " + String.join(", ", NAMES));
        };
    }
}
