package io.kvstore.service.error;

/** A request that is well-formed but invalid; answered 400 with the offending field named. */
public class InvalidRequestException extends RuntimeException {

    private final String field;

    public InvalidRequestException(String field, String message) {
        super(message, null, false, false);
        this.field = field;
    }

    /** The request field at fault, as the client spelled it (e.g. {@code blockHashes[3]}). */
    public String field() {
        return field;
    }
}
