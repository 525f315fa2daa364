package io.kvstore.engine;

/**
 * A store named a block that is already held with other bytes (another length or CRC32C). Equal keys
 * mean equal prefixes, so this is a client's hashing or framing bug; the stored copy is kept.
 */
public final class BlockConflictException extends RuntimeException {

    public BlockConflictException(String message) {
        super(message);
    }
}
