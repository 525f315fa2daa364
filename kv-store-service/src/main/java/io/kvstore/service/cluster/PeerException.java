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

    /**
     * 503 for a cluster setting etcd could not record; {@code consequence} says what holds meanwhile and what
     * the caller should do.
     */
    static PeerException etcdUnwritable(Exception cause, String consequence) {
        return new PeerException(503, "etcd cannot be written (" + cause + "): " + consequence, null);
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
