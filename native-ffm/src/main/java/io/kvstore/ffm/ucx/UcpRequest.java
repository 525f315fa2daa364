package io.kvstore.ffm.ucx;

import java.lang.foreign.MemorySegment;

/**
 * A posted UCX operation: the ucs_status_ptr_t it returned (NULL when it completed at once, an error
 * code, or a request to wait for) and the call, for error messages. Await it exactly once.
 */
public record UcpRequest(String call, MemorySegment statusPtr) {
}
