package io.kvstore.service.error;

/** Credentials that do not allow what the request asks (wrong token, another tenant's namespace); answered 403. */
public final class ForbiddenException extends RuntimeException {

    public ForbiddenException(String message) {
        super(message, null, false, false);
    }
}
