package io.kvstore.tier.device;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Host memory standing in for device memory, with plain copies: lets the {@link DeviceTier} and the
 * engine's demotion and promotion through it run on a machine without a GPU. Reported as
 * {@code emulated-device} wherever the tier shows; never chosen unless configured by that name.
 */
public final class EmulatedDeviceCopier implements DeviceCopier {

    public static final String NAME = "emulated-device";

    private final Arena arena = Arena.ofShared();
    private final MemorySegment region;

    public EmulatedDeviceCopier(long bytes) {
        this.region = arena.allocate(bytes, 4096);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean emulated() {
        return true;
    }

    @Override
    public long capacityBytes() {
        return region.byteSize();
    }

    @Override
    public MemorySegment region() {
        return region;
    }

    @Override
    public void toDevice(MemorySegment source, long deviceOffset) {
        MemorySegment.copy(source, 0, region, deviceOffset, source.byteSize());
    }

    @Override
    public void toHost(long deviceOffset, MemorySegment target) {
        MemorySegment.copy(region, deviceOffset, target, 0, target.byteSize());
    }

    @Override
    public void close() {
        arena.close();
    }
}
