package io.kvstore.tier;

import java.io.IOException;

/**
 * The device failed to read a copy's bytes back (EIO, or its file was cut short under the service), so the
 * copy is lost; unlike a read refused for another reason (a closed file at shutdown), it is never retried.
 */
public final class UnreadableCopyException extends BadCopyException {

    public UnreadableCopyException(String message, IOException cause) {
        super(message, cause);
    }
}
