package io.kvstore.service.error;

/** A request beyond a per-tenant quota; answered 429 with the limit named in the detail. */
public final class TooManyRequestsException extends RuntimeException {

    public TooManyRequestsException(String message) {
        super(message, null, false, false);
    }
}
