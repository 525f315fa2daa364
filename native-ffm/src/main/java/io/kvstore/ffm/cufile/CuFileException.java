package io.kvstore.ffm.cufile;

/**
 * A cuFile (GPUDirect Storage) call failed; the message names the call, its arguments, the
 * {@code CUfileOpError} name and, for CUDA driver errors, the {@code CUresult}, or the errno.
 */
public class CuFileException extends RuntimeException {

    private final int error;

    public CuFileException(String message, int error) {
        super(message);
        this.error = error;
    }

    /** The CUfileOpError value (5001 and up), an errno when the call reported one, or 0. */
    public int error() {
        return error;
    }
}
