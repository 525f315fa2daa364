package io.kvstore.service.error;

/** An unknown namespace, block or lease; answered 404. */
public final class NotFoundException extends RuntimeException {

    public NotFoundException(String message) {
        super(message, null, false, false);
    }
}
