package io.kvstore.engine;

/** A commit or cancel named a reservation that does not exist: never made, already committed or cancelled, or expired. */
public final class UnknownReservationException extends RuntimeException {

    public UnknownReservationException(String id) {
        super("reservation " + id + " is unknown: never made, already committed or cancelled, or expired");
    }
}
