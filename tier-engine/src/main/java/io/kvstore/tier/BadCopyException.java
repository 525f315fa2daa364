package io.kvstore.tier;

import java.io.IOException;

/**
 * A tier's copy of a block cannot be served and has been dropped from that tier: its bytes fail their
 * checksum, or the device could not read them back. Readers try the next tier that holds a copy; with none
 * left the block is no longer stored.
 */
public abstract sealed class BadCopyException extends IOException
        permits ChecksumMismatchException, UnreadableCopyException {

    protected BadCopyException(String message, Throwable cause) {
        super(message, cause);
    }

    protected BadCopyException(String message) {
        super(message);
    }
}
