package io.kvstore.service.error;

/** A request without credentials where they are needed; answered 401 with {@code WWW-Authenticate}. */
public final class UnauthorizedException extends RuntimeException {

    public UnauthorizedException(String message) {
        super(message, null, false, false);
    }
}
