package io.kvstore.service.error;

/** A one-sided call while the service has no one-sided transport; answered 503 with the reason. */
public final class TransportUnavailableException extends RuntimeException {

    public TransportUnavailableException(String reason) {
        super(
                "the one-sided transport is unavailable: " + reason + "; use the HTTP store and fetch instead",
                null,
                false,
                false);
    }
}
