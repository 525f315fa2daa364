package io.kvstore.transfer.ucx;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.TreeMap;

/**
 * The regions an engine registered, by base address, so a peer's active message naming an address is
 * served only when the whole range lies inside one of them ({@link #resolve}). Confined to the progress
 * thread.
 */
final class RegionTable {

    private final TreeMap<Long, UcxRegion> regions = new TreeMap<>();

    void add(UcxRegion region) {
        regions.put(region.segment.address(), region);
    }

    /**
     * The open region covering [address, address + length), or null: none does, or the one that does is
     * closing (a peer's new request must not start on memory about to be unmapped).
     */
    UcxRegion find(long address, long length) {
        Map.Entry<Long, UcxRegion> e = regions.floorEntry(address);
        if (e == null || length < 0 || e.getValue().closed) {
            return null;
        }
        MemorySegment seg = e.getValue().segment;
        long offset = address - seg.address();
        if (length > seg.byteSize() - offset) {
            return null;
        }
        return e.getValue();
    }

    /** Removes {@code region} and unmaps it from UCX (once: a second call finds it gone). */
    void unmap(UcxRegion region) {
        if (regions.remove(region.segment.address(), region)) {
            region.memory.close();
        }
    }

    /** Unmaps every region: the engine is closing. */
    void unmapAll() {
        for (UcxRegion r : regions.values()) {
            r.memory.close();
        }
        regions.clear();
    }
}
