package io.kvstore.tier.memory;

import java.lang.foreign.MemorySegment;

/**
 * One large block of tier memory obtained from a {@link MemoryProvider}. The region owns its memory:
 * closing it frees (and unlocks) the memory, after which every slot carved from it is invalid.
 *
 * @param segment the memory, aligned to at least 4 KiB
 * @param provider the provider's name, shown to operators
 * @param locked whether the pages are locked in RAM (mlock or pinned by CUDA)
 * @param release frees the memory; called once by {@link #close()}
 */
public record MemoryRegion(MemorySegment segment, String provider, boolean locked, Runnable release)
        implements AutoCloseable {

    @Override
    public void close() {
        release.run();
    }
}
