package io.kvstore.service.error;

/**
 * The client closed the connection while its body was read or its answer written. Nothing can be
 * answered; the error advice logs one INFO line and counts it ({@code kvstore_client_disconnects_total}).
 */
public final class ClientGoneException extends RuntimeException {

    public ClientGoneException(String message, Throwable cause) {
        super(message, cause, false, false);
    }
}
