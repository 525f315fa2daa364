package io.kvstore.ffm.cuda;

/** A CUDA runtime call returned an error; the message names the call, the cudaError_t name and its text. */
public class CudaException extends RuntimeException {

    public CudaException(String message) {
        super(message);
    }
}
