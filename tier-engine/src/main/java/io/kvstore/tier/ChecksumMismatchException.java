package io.kvstore.tier;

/** A block's bytes no longer match the CRC32C recorded when it was written; the block must not be served. */
public final class ChecksumMismatchException extends BadCopyException {

    public ChecksumMismatchException(String message) {
        super(message);
    }
}
