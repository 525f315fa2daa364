package io.kvstore.ffm.ucx;

import java.lang.foreign.MemorySegment;

/**
 * Helpers for {@code ucs_status_t} and {@code ucs_status_ptr_t}: the codes this project reacts to,
 * the status-pointer convention of the {@code *_nbx} calls and the library's own names.
 */
public final class UcpStatus {

    /** Success. */
    public static final int OK = 0;
    /** Operation in progress. */
    public static final int INPROGRESS = 1;
    /** No pending message (returned by ucp_worker_arm when events are pending). */
    public static final int ERR_BUSY = -15;
    /** Operation cancelled. */
    public static final int ERR_CANCELED = -16;
    /** Remote peer unreachable. */
    public static final int ERR_UNREACHABLE = -6;
    /** Remote access error; this project also uses it when a peer refuses an address. */
    public static final int ERR_INVALID_ADDR = -7;
    /** Connection reset by remote peer. */
    public static final int ERR_CONNECTION_RESET = -25;
    /** Endpoint timed out. */
    public static final int ERR_ENDPOINT_TIMEOUT = -80;

    /** Statuses below this are errors encoded in a status pointer (UCS_ERR_LAST = -100). */
    private static final long ERR_LAST = -100;

    private UcpStatus() {}

    /** Whether a {@code ucs_status_ptr_t} is an error code rather than NULL or a request. */
    public static boolean isError(MemorySegment statusPtr) {
        return Long.compareUnsigned(statusPtr.address(), ERR_LAST) >= 0;
    }

    /** Whether a {@code ucs_status_ptr_t} is a request handle that will complete later. */
    public static boolean isRequest(MemorySegment statusPtr) {
        return statusPtr.address() != 0 && !isError(statusPtr);
    }

    /** The status code carried by a status pointer (0 for NULL). */
    public static int of(MemorySegment statusPtr) {
        return (int) statusPtr.address();
    }

    /** The library's name for a status ({@code ucs_status_string}), or the number when UCX is absent. */
    public static String describe(int status) {
        return Ucp.isAvailable() ? Ucp.statusString(status) : "ucs_status " + status;
    }
}
