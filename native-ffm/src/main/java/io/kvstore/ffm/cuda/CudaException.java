package io.kvstore.ffm.cuda;

/** A CUDA runtime call returned an error; the message names the call, the cudaError_t name and its text. */
public class CudaException extends RuntimeException {

    private final int status;
    private final String errorName;

    public CudaException(String message) {
        super(message);
        this.status = -1;
        this.errorName = "";
    }

    /** A failed call: {@code call} with its arguments, the cudaError_t value, its name and its text. */
    public CudaException(String call, int status, String errorName, String errorText) {
        super(call + " failed: " + errorName + " (" + status + "): " + errorText);
        this.status = status;
        this.errorName = errorName;
    }

    /** The cudaError_t value, or -1 when the failure did not come from a status. */
    public int status() {
        return status;
    }

    /** The cudaError_t name (e.g. {@code cudaErrorMemoryAllocation}), or "" when there is none. */
    public String errorName() {
        return errorName;
    }
}
