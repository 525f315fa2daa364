package io.kvstore.tier;

import java.io.IOException;

/**
 * No slot of the needed size is free in the tier. Under load this is the normal signal that makes the
 * engine evict and retry, thrown for many puts a second, so it takes no stack trace: its message says
 * which tier and how full.
 */
public class TierFullException extends IOException {

    public TierFullException(String message) {
        super(message);
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
