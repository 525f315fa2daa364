package io.kvstore.service.local;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which clients of the control socket are connected: a client names itself in its HELLO (a random id, the
 * same on all its connections), and it counts as connected while any of them is open. A client that closed
 * every connection itself is gone (a process that exited, or closed every connection, writes no more), which
 * is what lets its fenced slots go back clean. Keyed by tenant as well, so a client of another tenant naming
 * the same id holds nothing of this one's.
 */
final class WriterConnections {

    /**
     * One client's connections, from its first to its last: a connection of the same id after the last one
     * closed starts a new one, and fences given before keep seeing this one gone.
     */
    static final class Client {
        private final AtomicInteger open = new AtomicInteger();
        /** Set when kvstore closed one of them: the client did not necessarily go, so it may still write. */
        private volatile boolean closedByService;

        /** Whether the client can write no more: it closed every connection, none was closed by kvstore. */
        boolean gone() {
            return open.get() == 0 && !closedByService;
        }
    }

    private final ConcurrentHashMap<String, Client> open = new ConcurrentHashMap<>();

    /** A connection of the client opened; the answer tells whether the client is connected, for its fences. */
    Client opened(String tenant, String clientId) {
        return open.compute(tenant + '\u0000' + clientId, (k, c) -> {
            Client client = c == null ? new Client() : c;
            client.open.incrementAndGet();
            return client;
        });
    }

    /**
     * A connection opened by {@link #opened} closed, by the client or ({@code byService}) by kvstore. The
     * client's last one drops its entry.
     */
    void closed(String tenant, String clientId, Client client, boolean byService) {
        if (byService) {
            client.closedByService = true; // before the count falls: never seen gone on the way
        }
        open.computeIfPresent(tenant + '\u0000' + clientId, (k, c) -> c.open.decrementAndGet() > 0 ? c : null);
    }
}
