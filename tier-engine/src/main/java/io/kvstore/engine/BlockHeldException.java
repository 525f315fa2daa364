package io.kvstore.engine;

/** A delete named a block that is pinned or leased; it stays until unpinned or released. */
public final class BlockHeldException extends RuntimeException {

    public BlockHeldException(String message) {
        super(message);
    }
}
