package io.kvstore.service.error;

/** The service could not persist a change (a full disk, a failing write); answered 507, nothing changed. */
public final class InsufficientStorageException extends RuntimeException {

    public InsufficientStorageException(String message, Throwable cause) {
        super(message, cause, false, false);
    }
}
