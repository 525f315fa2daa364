package io.kvstore.tier.memory;

import io.kvstore.ffm.Availability;
import java.lang.foreign.Arena;

/**
 * Host memory standing in for GPU HBM, so the HBM tier and its demotion path can be exercised without a
 * GPU. For tests and demos only: it is never chosen unless configured by name, and it is reported as
 * {@code emulated-device} wherever the tier shows.
 */
public final class EmulatedDeviceMemoryProvider implements MemoryProvider {

    public static final String NAME = "emulated-device";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Availability availability() {
        return Availability.available("host memory emulating device memory (tests and demos only)");
    }

    @Override
    public boolean emulated() {
        return true;
    }

    @Override
    @SuppressWarnings("MustBeClosedChecker") // the arena lives as long as the region, which closes it
    public MemoryRegion allocate(long bytes) {
        if (bytes <= 0 || bytes % 4096 != 0) {
            throw new IllegalArgumentException("region size must be a positive multiple of 4 KiB, got " + bytes);
        }
        Arena arena = Arena.ofShared();
        try {
            return new MemoryRegion(arena.allocate(bytes, 4096), NAME, false, arena::close);
        } catch (OutOfMemoryError e) {
            arena.close();
            throw new IllegalStateException("cannot allocate " + bytes + " bytes for emulated device memory", e);
        }
    }
}
