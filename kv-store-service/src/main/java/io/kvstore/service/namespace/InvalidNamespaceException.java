package io.kvstore.service.namespace;

import io.kvstore.service.error.InvalidRequestException;

/** A namespace declaration with a missing or out-of-range field; answered 400 naming the field. */
public final class InvalidNamespaceException extends InvalidRequestException {

    public InvalidNamespaceException(String field, String message) {
        super(field, message);
    }
}
