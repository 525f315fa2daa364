package io.kvstore.transfer;

/** A transfer failed or timed out; the message names the backend, the peer and the native status. */
public class TransferException extends RuntimeException {

    public TransferException(String message) {
        super(message);
    }

    public TransferException(String message, Throwable cause) {
        super(message, cause);
    }
}
