package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.StructLayout;

/**
 * The UCX 1.13 parameter structs this binding fills, laid out as in {@code ucp/api/ucp.h} on
 * x86-64/aarch64 (LP64). Only fields the binding writes are named; the rest are padding of the right
 * size, so {@code byteSize()} equals the C {@code sizeof}. A test compiles a C {@code offsetof}
 * program against the installed headers and compares every named field.
 */
public final class UcpStructs {

    /** {@code ucp_params_t} (80 bytes). */
    public static final StructLayout PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_LONG.withName("features"),
            JAVA_LONG.withName("request_size"),
            ADDRESS.withName("request_init"),
            ADDRESS.withName("request_cleanup"),
            JAVA_LONG.withName("tag_sender_mask"),
            JAVA_INT.withName("mt_workers_shared"),
            MemoryLayout.paddingLayout(4),
            JAVA_LONG.withName("estimated_num_eps"),
            JAVA_LONG.withName("estimated_num_ppn"),
            ADDRESS.withName("name"));

    /** {@code ucp_worker_params_t} (200 bytes; {@code ucs_cpu_set_t} is 1024 bits). */
    public static final StructLayout WORKER_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_INT.withName("thread_mode"),
            MemoryLayout.paddingLayout(4),
            MemoryLayout.sequenceLayout(16, JAVA_LONG).withName("cpu_mask"),
            JAVA_INT.withName("events"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("user_data"),
            JAVA_INT.withName("event_fd"),
            MemoryLayout.paddingLayout(4),
            JAVA_LONG.withName("flags"),
            ADDRESS.withName("name"),
            JAVA_LONG.withName("am_alignment"),
            JAVA_LONG.withName("client_id"));

    /** {@code ucp_ep_params_t} (104 bytes). */
    public static final StructLayout EP_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_INT.withName("err_mode"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("err_handler_cb"),
            ADDRESS.withName("err_handler_arg"),
            ADDRESS.withName("user_data"),
            JAVA_INT.withName("flags"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("sockaddr_addr"),
            JAVA_INT.withName("sockaddr_addrlen"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("conn_request"),
            ADDRESS.withName("name"),
            MemoryLayout.paddingLayout(16).withName("local_sockaddr"));

    /** {@code ucp_listener_params_t} (56 bytes): socket address and the connection-request handler. */
    public static final StructLayout LISTENER_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("sockaddr_addr"),
            JAVA_INT.withName("sockaddr_addrlen"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("accept_handler_cb"),
            ADDRESS.withName("accept_handler_arg"),
            ADDRESS.withName("conn_handler_cb"),
            ADDRESS.withName("conn_handler_arg"));

    /** {@code ucp_listener_attr_t} (136 bytes): the address a listener is bound to, as a sockaddr_storage. */
    public static final StructLayout LISTENER_ATTR = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            MemoryLayout.sequenceLayout(128, JAVA_BYTE).withName("sockaddr"));

    /** {@code ucp_request_param_t} (72 bytes). */
    public static final StructLayout REQUEST_PARAM = MemoryLayout.structLayout(
            JAVA_INT.withName("op_attr_mask"),
            JAVA_INT.withName("flags"),
            ADDRESS.withName("request"),
            ADDRESS.withName("cb"),
            JAVA_LONG.withName("datatype"),
            ADDRESS.withName("user_data"),
            ADDRESS.withName("reply_buffer"),
            JAVA_INT.withName("memory_type"),
            MemoryLayout.paddingLayout(4),
            ADDRESS.withName("recv_info"),
            ADDRESS.withName("memh"));

    /** {@code ucp_mem_map_params_t} (40 bytes). */
    public static final StructLayout MEM_MAP_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("flags"),
            JAVA_INT.withName("prot"),
            JAVA_INT.withName("memory_type"),
            MemoryLayout.paddingLayout(4));

    /** {@code ucp_mem_attr_t} (32 bytes), filled by {@code ucp_mem_query}. */
    public static final StructLayout MEM_ATTR = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("mem_type"),
            MemoryLayout.paddingLayout(4));

    /** {@code ucp_am_handler_param_t} (32 bytes). */
    public static final StructLayout AM_HANDLER_PARAM = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_INT.withName("id"),
            JAVA_INT.withName("flags"),
            ADDRESS.withName("cb"),
            ADDRESS.withName("arg"));

    /** {@code ucp_am_recv_param_t} (16 bytes), passed to active-message handlers. */
    public static final StructLayout AM_RECV_PARAM =
            MemoryLayout.structLayout(JAVA_LONG.withName("recv_attr"), ADDRESS.withName("reply_ep"));

    private UcpStructs() {}

    /** Byte offset of a named field, for writers and for the layout test. */
    public static long offset(StructLayout layout, String field) {
        return layout.byteOffset(PathElement.groupElement(field));
    }
}
