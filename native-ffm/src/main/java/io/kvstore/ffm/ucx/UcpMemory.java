package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Memory registered with UCX ({@code ucp_mem_map} of an existing segment) and its packed remote key,
 * which a peer unpacks to read or write the memory one-sided. The segment stays owned by its allocator;
 * closing this only unregisters it.
 */
public final class UcpMemory implements AutoCloseable {

    private final UcpContext context;
    private final MemorySegment segment;
    private final MemorySegment memh;
    private final byte[] packedKey;

    UcpMemory(UcpContext context, MemorySegment segment) {
        this.context = context;
        this.segment = segment;
        Ucp ucp = context.ucp();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(Ucp.MEM_MAP_PARAMS);
            params.set(JAVA_LONG, 0, Ucp.MEM_MAP_PARAM_FIELD_ADDRESS | Ucp.MEM_MAP_PARAM_FIELD_LENGTH);
            params.set(ADDRESS, 8, segment);
            params.set(JAVA_LONG, 16, segment.byteSize());
            MemorySegment out = arena.allocate(ADDRESS);
            Ucp.check("ucp_mem_map(" + segment.byteSize() + " bytes at 0x" + Long.toHexString(segment.address()) + ")",
                    (int) ucp.memMap.invokeExact(context.handle(), params, out));
            memh = out.get(ADDRESS, 0);
            MemorySegment buffer = arena.allocate(ADDRESS);
            MemorySegment size = arena.allocate(JAVA_LONG);
            int status = (int) ucp.rkeyPack.invokeExact(context.handle(), memh, buffer, size);
            if (status != Ucp.OK) {
                int ignored = (int) ucp.memUnmap.invokeExact(context.handle(), memh);
                Ucp.check("ucp_rkey_pack", status);
            }
            MemorySegment packed = buffer.get(ADDRESS, 0).reinterpret(size.get(JAVA_LONG, 0));
            packedKey = PackedKey.wrap(packed.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
            ucp.rkeyBufferRelease.invokeExact(packed);
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_mem_map", t);
        }
    }

    public MemorySegment segment() {
        return segment;
    }

    /** The packed remote key (in kvstore's checked envelope) to publish with the segment's address and length. */
    public byte[] packedKey() {
        return packedKey.clone();
    }

    @Override
    public void close() {
        try {
            Ucp.check("ucp_mem_unmap", (int) context.ucp().memUnmap.invokeExact(context.handle(), memh));
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_mem_unmap", t);
        }
    }
}
