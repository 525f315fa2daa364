package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.UcpMemory;
import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;

/**
 * Host memory registered with (or allocated by) a {@link UcxTransferEngine}: its UCX mapping and the
 * {@link RegionKey} published for it. Closing hands the region to the close callback its engine gave
 * it, which lets operations on it finish before unmapping; the region holds no reference to the engine.
 */
final class UcxRegion implements LocalRegion {

    final UcpMemory memory;
    final MemorySegment segment;
    private final byte[] key;
    private final Object owner;
    private final Consumer<UcxRegion> onClose;
    /** Set on the progress thread when the region starts closing; no new request may use it. */
    boolean closed;

    UcxRegion(UcpMemory memory, MemorySegment segment, Object owner, Consumer<UcxRegion> onClose) {
        this.memory = memory;
        this.segment = segment;
        this.owner = owner;
        this.onClose = onClose;
        this.key = new RegionKey(segment.address(), segment.byteSize(), memory.packedRkey()).encode();
    }

    /** The bytes [address, address + length) of this region ({@link RegionTable#find} checked they lie in it). */
    MemorySegment slice(long address, long length) {
        return segment.asSlice(address - segment.address(), length);
    }

    /** Whether the engine identified by {@code engine} registered this region. */
    boolean ownedBy(Object engine) {
        return owner == engine;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public MemoryKind kind() {
        return MemoryKind.DRAM;
    }

    @Override
    public byte[] remoteKey() {
        return key.clone();
    }

    @Override
    public void close() {
        onClose.accept(this);
    }

    @Override
    public String toString() {
        return "UCX region 0x" + Long.toHexString(segment.address()) + "+" + segment.byteSize();
    }
}
