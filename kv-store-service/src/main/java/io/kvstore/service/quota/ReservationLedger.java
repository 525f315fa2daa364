package io.kvstore.service.quota;

import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.TooManyRequestsException;
import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Who holds which uncommitted reservation, so one tenant cannot reserve all of DRAM (a reservation holds
 * its slots until committed, cancelled or expired): each tenant may hold at most
 * {@code kvstore.limits.reserved-fraction-per-tenant} of the DRAM tier in reservations at once; a
 * reservation that would pass it is refused with 429 naming the limit. Also tells which tenant a
 * reservation belongs to, so only it can commit or cancel it.
 */
public final class ReservationLedger {

    /** One reservation as the ledger knows it. */
    public record Held(String tenant, String namespace, long bytes, Instant expiresAt) {}

    private final Map<String, Held> held = new ConcurrentHashMap<>();
    private final long bytesPerTenant;
    private final Clock clock;

    public ReservationLedger(KvStoreProperties properties, Clock clock) {
        this.bytesPerTenant = (long) (properties.tiers().dram().capacity().toBytes()
                * properties.limits().reservedFractionPerTenant());
        this.clock = clock;
    }

    /** The most a tenant may hold reserved at once, in bytes. */
    public long bytesPerTenant() {
        return bytesPerTenant;
    }

    /** Bytes the tenant holds in live reservations now. */
    public synchronized long reservedBy(String tenant) {
        Instant now = clock.instant();
        held.values().removeIf(h -> h.expiresAt().isBefore(now));
        long sum = 0;
        for (Held h : held.values()) {
            if (h.tenant().equals(tenant)) {
                sum += h.bytes();
            }
        }
        return sum;
    }

    /**
     * Admits a reservation of {@code bytes} for the tenant when it fits its share, holding the bytes under a
     * provisional key until {@link #confirm} (or {@link #done} when the reservation failed), so two
     * concurrent reservations cannot both pass the check.
     *
     * @throws TooManyRequestsException when the tenant's share would be passed
     */
    public synchronized String admit(String tenant, String namespace, long bytes, Instant expiresAt) {
        long already = reservedBy(tenant);
        if (already + bytes > bytesPerTenant) {
            throw new TooManyRequestsException("tenant '" + tenant + "' holds " + already + " bytes in uncommitted "
                    + "reservations; " + bytes + " more would pass its share of " + bytesPerTenant + " bytes "
                    + "(kvstore.limits.reserved-fraction-per-tenant of the DRAM tier): commit or cancel first");
        }
        String key = "pending-" + java.util.UUID.randomUUID();
        held.put(key, new Held(tenant, namespace, bytes, expiresAt));
        return key;
    }

    /** Turns an admitted provisional entry into the engine's reservation. */
    public synchronized void confirm(String provisional, String reservationId, long bytes, Instant expiresAt) {
        Held h = held.remove(provisional);
        if (h != null) {
            held.put(reservationId, new Held(h.tenant(), h.namespace(), bytes, expiresAt));
        }
    }

    /** The reservation's holder, or null when the ledger does not know it (never made, done or expired). */
    public @Nullable Held get(String reservationId) {
        return held.get(reservationId);
    }

    public void done(String reservationId) {
        held.remove(reservationId);
    }
}
