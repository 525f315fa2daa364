package io.kvstore.service.error;

/** A request that contradicts the store's state (a namespace redeclared with another layout); answered 409. */
public final class ConflictException extends RuntimeException {

    public ConflictException(String message) {
        super(message, null, false, false);
    }
}
