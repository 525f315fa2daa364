package io.kvstore.ffm.ucx;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.MemorySegment;

/**
 * Memory registered with a context ({@code ucp_mem_h}) and its packed remote key, which a peer
 * unpacks to put into or get from it. Closing unmaps it; the segment stays owned by its allocator.
 */
public final class UcpMemory extends NativeHandle {

    private final UcpContext context;
    private final MemorySegment segment;
    private final byte[] packedRkey;

    UcpMemory(UcpContext context, MemorySegment memh, MemorySegment segment, byte[] packedRkey) {
        super(memh);
        this.context = context;
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
        return live();
    }

    /** {@code ucp_mem_unmap}. */
    @Override
    protected void release(MemorySegment memh) {
        try {
            UcpContext.check("ucp_mem_unmap(address=0x" + Long.toHexString(segment.address()) + ")", (int)
                    Ucp.h().memUnmap.invokeExact(context.handle(), memh));
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return "UCP memory at 0x" + Long.toHexString(segment.address()) + " (" + segment.byteSize() + " bytes)";
    }
}
