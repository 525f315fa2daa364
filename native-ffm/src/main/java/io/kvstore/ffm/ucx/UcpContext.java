package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;

/**
 * A UCP context ({@code ucp_context_h}): the set of transports and features one engine uses.
 * Configuration comes from the {@code UCX_*} environment first, then from the {@code overrides}
 * given here (e.g. {@code TLS=tcp}), so one process can hold contexts on different transports.
 */
public final class UcpContext extends NativeHandle {

    private UcpContext(MemorySegment handle) {
        super(handle);
    }

    /**
     * {@code ucp_config_read} + {@code ucp_config_modify} for each override + {@code ucp_init}.
     *
     * @param features {@code Ucp.FEATURE_*} bits
     * @param overrides UCX settings without the {@code UCX_} prefix, e.g. {@code TLS -> tcp}
     */
    public static UcpContext create(long features, Map<String, String> overrides) {
        Ucp.Handles h = Ucp.h();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment configOut = arena.allocate(ADDRESS);
            check("ucp_config_read", (int) h.configRead.invokeExact(MemorySegment.NULL, MemorySegment.NULL, configOut));
            MemorySegment config = configOut.get(ADDRESS, 0);
            try {
                for (Map.Entry<String, String> e : overrides.entrySet()) {
                    int st = (int) h.configModify.invokeExact(
                            config, arena.allocateFrom(e.getKey()), arena.allocateFrom(e.getValue()));
                    check("ucp_config_modify(" + e.getKey() + "=" + e.getValue() + ")", st);
                }
                MemorySegment params = arena.allocate(UcpStructs.PARAMS);
                params.set(JAVA_LONG, UcpStructs.offset(UcpStructs.PARAMS, "field_mask"), 1L /* FEATURES */);
                params.set(JAVA_LONG, UcpStructs.offset(UcpStructs.PARAMS, "features"), features);
                MemorySegment out = arena.allocate(ADDRESS);
                check("ucp_init(features=0x" + Long.toHexString(features) + ")", (int)
                        h.initVersion.invokeExact(1, 13, params, config, out));
                return new UcpContext(out.get(ADDRESS, 0));
            } finally {
                h.configRelease.invokeExact(config);
            }
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /** Registers {@code segment} for RMA ({@code ucp_mem_map}) and packs its rkey. */
    public UcpMemory map(MemorySegment segment) {
        Ucp.Handles h = Ucp.h();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(UcpStructs.MEM_MAP_PARAMS);
            params.set(JAVA_LONG, 0, 0b11L /* ADDRESS | LENGTH */);
            params.set(ADDRESS, UcpStructs.offset(UcpStructs.MEM_MAP_PARAMS, "address"), segment);
            params.set(JAVA_LONG, UcpStructs.offset(UcpStructs.MEM_MAP_PARAMS, "length"), segment.byteSize());
            MemorySegment out = arena.allocate(ADDRESS);
            check(
                    "ucp_mem_map(address=0x" + Long.toHexString(segment.address()) + ", length=" + segment.byteSize()
                            + ")",
                    (int) h.memMap.invokeExact(handle(), params, out));
            return packed(out.get(ADDRESS, 0), segment);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    /**
     * {@code ucp_mem_map} with {@code UCP_MEM_MAP_ALLOCATE}: memory UCX allocates itself (shared
     * memory segments when an mm transport is enabled), so a same-host peer maps it and moves bytes
     * with a plain copy instead of a syscall or a message per access. Freed by closing the result.
     */
    public UcpMemory allocate(long length) {
        if (length <= 0) {
            throw new IllegalArgumentException("allocation length must be positive, got " + length);
        }
        Ucp.Handles h = Ucp.h();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(UcpStructs.MEM_MAP_PARAMS);
            params.set(JAVA_LONG, 0, 0b111L /* ADDRESS | LENGTH | FLAGS */);
            params.set(ADDRESS, UcpStructs.offset(UcpStructs.MEM_MAP_PARAMS, "address"), MemorySegment.NULL);
            params.set(JAVA_LONG, UcpStructs.offset(UcpStructs.MEM_MAP_PARAMS, "length"), length);
            params.set(JAVA_INT, UcpStructs.offset(UcpStructs.MEM_MAP_PARAMS, "flags"), 1 << 1 /* ALLOCATE */);
            MemorySegment out = arena.allocate(ADDRESS);
            check("ucp_mem_map(ALLOCATE, length=" + length + ")", (int) h.memMap.invokeExact(handle(), params, out));
            MemorySegment memh = out.get(ADDRESS, 0);
            MemorySegment attr = arena.allocate(UcpStructs.MEM_ATTR);
            attr.set(JAVA_LONG, 0, 0b11L /* ADDRESS | LENGTH */);
            int st = (int) h.memQuery.invokeExact(memh, attr);
            if (st != UcpStatus.OK) {
                int ignored = (int) h.memUnmap.invokeExact(handle(), memh);
                throw new UcxException("ucp_mem_query", st);
            }
            MemorySegment segment = attr.get(ADDRESS, UcpStructs.offset(UcpStructs.MEM_ATTR, "address"))
                    .reinterpret(length);
            return packed(memh, segment);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    private UcpMemory packed(MemorySegment memh, MemorySegment segment) throws Throwable {
        Ucp.Handles h = Ucp.h();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(ADDRESS);
            MemorySegment size = arena.allocate(JAVA_LONG);
            int st = (int) h.rkeyPack.invokeExact(handle(), memh, buf, size);
            if (st != UcpStatus.OK) {
                int ignored = (int) h.memUnmap.invokeExact(handle(), memh);
                throw new UcxException("ucp_rkey_pack", st);
            }
            MemorySegment packed = buf.get(ADDRESS, 0).reinterpret(size.get(JAVA_LONG, 0));
            byte[] rkey = packed.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            h.rkeyBufferRelease.invokeExact(packed);
            return new UcpMemory(this, memh, segment, rkey);
        }
    }

    MemorySegment handle() {
        return live();
    }

    /** {@code ucp_cleanup}; every worker and mapping of this context must be gone first. */
    @Override
    protected void release(MemorySegment handle) {
        try {
            Ucp.h().cleanup.invokeExact(handle);
        } catch (Throwable t) {
            throw Ucp.rethrow(t);
        }
    }

    static void check(String call, int status) {
        if (status != UcpStatus.OK) {
            throw new UcxException(call, status);
        }
    }

    static int intOf(MemorySegment seg) {
        return seg.get(JAVA_INT, 0);
    }

    @Override
    public String toString() {
        return "UCP context 0x" + Long.toHexString(handleAddress());
    }
}
