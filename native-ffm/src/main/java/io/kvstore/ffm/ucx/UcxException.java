package io.kvstore.ffm.ucx;

/** A UCX call failed; the message names the call, its arguments and the UCS status name. */
public final class UcxException extends RuntimeException {

    private final int status;

    public UcxException(String call, int status) {
        super(call + " failed: " + UcpStatus.describe(status) + " (" + status + ")");
        this.status = status;
    }

    /** The ucs_status_t returned by the call (negative). */
    public int status() {
        return status;
    }
}
