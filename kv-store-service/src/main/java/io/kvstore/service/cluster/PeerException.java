package io.kvstore.service.cluster;

import java.io.IOException;

/**
 * A node-to-node call that failed: the peer refused it (its status and problem detail are passed on) or
 * could not be reached (status 503).
 */
public final class PeerException extends IOException {

    private final int status;

    public PeerException(int status, String message, Throwable cause) {
        super(message, cause);
        this.status = status;
    }

    /** The HTTP status to answer the client with. */
    public int status() {
        return status;
    }

    /** Whether the peer could not be reached at all (down, or slower than {@code peer-timeout}). */
    public boolean unreachable() {
        return status == 503 && getCause() != null;
    }
}
