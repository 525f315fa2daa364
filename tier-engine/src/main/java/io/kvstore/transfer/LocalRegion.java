package io.kvstore.transfer;

import java.lang.foreign.MemorySegment;

/**
 * Memory this process registered with a {@link TransferEngine} so that peers may read or write it
 * one-sided. Closing it deregisters the memory; the segment itself stays owned by its allocator.
 */
public interface LocalRegion extends AutoCloseable {

    MemorySegment segment();

    MemoryKind kind();

    /**
     * What a peer needs to access this region (a packed UCX rkey, NIXL's registration descriptor),
     * to be published with the region's address and length.
     */
    byte[] remoteKey();

    /** The region as a peer addresses it. */
    default RemoteRegion describe() {
        return new RemoteRegion(segment().address(), segment().byteSize(), remoteKey());
    }

    @Override
    void close();
}
