package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.UcpRemoteKey;
import java.lang.foreign.MemorySegment;

/** How a request's chunks travel on one {@link UcxPath}; one implementation per path. */
sealed interface Poster permits RmaPoster, ActiveMessagePoster {

    /** The peer's handle on the remote region for this path: an unpacked rkey for RMA, none (null) otherwise. */
    UcpRemoteKey remoteKey(UcxPeer peer, RegionKey key);

    /** Posts one chunk: {@code slice} to or from {@code remoteAddress}, counted in {@code request.pending}. */
    void postChunk(UcxRequest request, MemorySegment slice, long remoteAddress, UcpRemoteKey rkey);

    /** After the last chunk: whatever makes the request's completion mean the bytes are in place remotely. */
    void afterChunks(UcxRequest request);
}
