package io.kvstore.service.error;

/** A request body over {@code kvstore.max-request-size}; answered 413. */
public final class PayloadTooLargeException extends RuntimeException {

    public PayloadTooLargeException(String message) {
        super(message, null, false, false);
    }
}
