package io.kvstore.ffm.ucx;

/** A UCX call failed or timed out; the message names the call and the ucs_status_t name. */
public class UcxException extends RuntimeException {

    private final int status;

    public UcxException(String message, int status) {
        super(message);
        this.status = status;
    }

    /** The ucs_status_t (negative), or 0 for a time-out kvstore imposed. */
    public int status() {
        return status;
    }
}
