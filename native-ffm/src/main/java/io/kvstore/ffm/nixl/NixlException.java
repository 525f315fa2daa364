package io.kvstore.ffm.nixl;

/** A NIXL C API call failed; the message names the call, its arguments and the {@code nixl_capi_status_t} name. */
public class NixlException extends RuntimeException {

    private final int status;

    public NixlException(String call, int status) {
        super(call + " failed: " + statusName(status) + " (" + status + ")");
        this.status = status;
    }

    /** The nixl_capi_status_t value. */
    public int status() {
        return status;
    }

    /** The wrapper.h name of a nixl_capi_status_t value. */
    public static String statusName(int status) {
        return switch (status) {
            case 0 -> "NIXL_CAPI_SUCCESS";
            case 1 -> "NIXL_CAPI_IN_PROG";
            case -1 -> "NIXL_CAPI_ERROR_INVALID_PARAM";
            case -2 -> "NIXL_CAPI_ERROR_BACKEND";
            case -3 -> "NIXL_CAPI_ERROR_INVALID_STATE";
            case -4 -> "NIXL_CAPI_ERROR_EXCEPTION";
            case -5 -> "NIXL_CAPI_ERROR_NO_TELEMETRY";
            case -6 -> "NIXL_CAPI_ERROR_NOT_FOUND";
            default -> "nixl_capi_status_t " + status;
        };
    }
}
