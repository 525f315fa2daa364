package io.kvstore.ffm.ucx;

import java.lang.foreign.MemorySegment;

/**
 * Memory registered with a context ({@code ucp_mem_h}) and its packed remote key, which a peer
 * unpacks to put into or get from it. Closing unmaps it; the segment stays owned by its allocator.
 */
public final class UcpMemory implements AutoCloseable {

    private final UcpContext context;
    private final MemorySegment memh;
    private final MemorySegment segment;
    private final byte[] packedRkey;
    private boolean closed;

    UcpMemory(UcpContext context, MemorySegment memh, MemorySegment segment, byte[] packedRkey) {
        this.context = context;
        this.memh = memh;
        this.segment = segment;
        this.packedRkey = packedRkey;
    }

    public MemorySegment segment() {
        return segment;
    }

    /** The {@code ucp_rkey_pack} output, to be sent to peers. */
    public byte[] packedRkey() {
        return packedRkey.clone();
    }

    /** The registration handle, for {@code UCP_OP_ATTR_FIELD_MEMH}. */
    public MemorySegment handle() {
        return memh;
    }

    /** {@code ucp_mem_unmap}. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            UcpContext.check("ucp_mem_unmap(address=0x" + Long.toHexString(segment.address()) + ")", (int)
                    Ucp.h().memUnmap.invokeExact(context.handle(), memh));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }
}
