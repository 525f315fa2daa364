package io.kvstore.service.local;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * Which clients of the control socket are connected: a client names itself in its HELLO (a random id, the
 * same on all its connections), and it counts as connected while any of them is open. Its reservations'
 * slots stay fenced past their expiry while it is (a process that is gone, or closed every connection, writes
 * no more), which is what lets such a client commit without CRC32Cs of its own. Keyed by tenant as well, so a
 * client of another tenant naming the same id holds nothing of this one's.
 */
final class WriterConnections {

    private final ConcurrentHashMap<String, AtomicInteger> open = new ConcurrentHashMap<>();

    /** A connection of the client opened; the answer tells whether the client is connected, for its fences. */
    BooleanSupplier opened(String tenant, String clientId) {
        String key = tenant + '\u0000' + clientId;
        AtomicInteger count = open.compute(key, (k, c) -> {
            AtomicInteger n = c == null ? new AtomicInteger() : c;
            n.incrementAndGet();
            return n;
        });
        return () -> count.get() > 0;
    }

    /**
     * A connection opened by {@link #opened} closed. The client's last one drops its entry: fences given
     * before keep seeing zero (the client wrote nothing once it had no connection), and a connection of the
     * same id later starts a new count.
     */
    void closed(String tenant, String clientId) {
        open.computeIfPresent(tenant + '\u0000' + clientId, (k, c) -> c.decrementAndGet() > 0 ? c : null);
    }
}
