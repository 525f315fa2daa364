package io.kvstore.tier;

import java.io.IOException;

/** A block's bytes no longer match the CRC32C recorded when it was written; the block must not be served. */
public class ChecksumMismatchException extends IOException {

    public ChecksumMismatchException(String message) {
        super(message);
    }
}
