package io.kvstore.service.error;

/** A request body that did not arrive in time (an upload past its deadline or stalled); answered 408. */
public final class RequestTimeoutException extends RuntimeException {

    public RequestTimeoutException(String message) {
        super(message, null, false, false);
    }
}
