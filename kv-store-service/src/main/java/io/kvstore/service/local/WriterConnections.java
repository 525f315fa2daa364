package io.kvstore.service.local;

import io.kvstore.engine.WriterState;
import io.kvstore.service.security.Caller;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * Which clients of the control socket are connected: a client names itself in its HELLO (a random id, the
 * same on all its connections), and it counts as connected while any of them is open. Once every one is closed
 * the client has ended, for good: gone when it closed the last one itself (a process that exited, or closed
 * every connection, writes no more), which is what lets its fenced slots go back clean; lost when kvstore
 * closed the last one (a revoked token's: its process may live on and write, and nothing will show when it
 * stops). Either way nothing of it is kept. Keyed by tenant as well, so a client of another tenant naming the
 * same id holds nothing of this one's.
 *
 * <p>A lease belongs to the client, not to the connection it was granted on (a client may release it over any
 * of its connections): those it has not released when it ends are released then.
 */
final class WriterConnections {

    /** A lease a client was granted and has not released yet, with who was granted it. */
    record Held(Caller caller, Instant expiresAt) {}

    /**
     * One client's connections, from its first to its last: a connection of the same id after the last one
     * closed starts a new one, and fences given before keep seeing this one ended.
     */
    static final class Client {
        /** Leases kept before a sweep drops those past their expiry (released over HTTP or by their timeout). */
        private static final int SWEEP_LEASES_AT = 64;

        /** Changed only under the map's lock of the client's key. */
        private final AtomicInteger open = new AtomicInteger();
        /** Null while a connection is open; then GONE or LOST, for good. */
        private volatile @Nullable WriterState ended;

        private final Map<String, Held> leases = new ConcurrentHashMap<>();

        /**
         * Null while the client has a connection open; else {@link WriterState#GONE} when it closed its last
         * one itself, {@link WriterState#LOST} when kvstore did.
         */
        @Nullable
        WriterState ended() {
            return ended;
        }

        /** A lease granted to the client on one of its connections, until released (or the client ends). */
        void leased(String leaseId, Caller caller, Instant expiresAt) {
            if (leases.size() >= SWEEP_LEASES_AT) {
                Instant now = Instant.now();
                leases.values().removeIf(h -> h.expiresAt().isBefore(now));
            }
            leases.put(leaseId, new Held(caller, expiresAt));
        }

        /** The client released the lease (over any of its connections), or kvstore did for it. */
        void released(String leaseId) {
            leases.remove(leaseId);
        }

        /** Takes the leases the client has not released: once it ended, no one else will. */
        List<Map.Entry<String, Held>> takeLeases() {
            List<Map.Entry<String, Held>> left = List.copyOf(leases.entrySet());
            left.forEach(e -> leases.remove(e.getKey()));
            return left;
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
     * client's last one ends it and drops its entry: returns whether this one did.
     */
    boolean closed(String tenant, String clientId, boolean byService) {
        boolean[] last = {false};
        open.computeIfPresent(tenant + '\u0000' + clientId, (k, c) -> {
            if (c.open.decrementAndGet() > 0) {
                return c;
            }
            c.ended = byService ? WriterState.LOST : WriterState.GONE;
            last[0] = true;
            return null;
        });
        return last[0];
    }
}
