package io.kvstore.service.quota;

import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.TooManyRequestsException;
import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;
import org.jspecify.annotations.Nullable;

/**
 * Who holds which uncommitted reservation, so one tenant cannot reserve all of DRAM (a reservation holds
 * its slots until committed, cancelled or expired): each tenant may hold at most
 * {@code kvstore.tenants.<name>.reserved} bytes, or else {@code kvstore.limits.reserved-fraction-per-tenant}
 * of the DRAM tier, in reservations at once; a reservation that would pass it is refused with 429 naming
 * the limit. Also tells which tenant a reservation belongs to, so only it can commit or cancel it.
 * Admissions of one tenant are serialized on that tenant's own lock; tenants never wait for each other.
 */
public final class ReservationLedger {

    /**
     * One reservation as the ledger knows it.
     *
     * @param stillHeld for a reservation whose slots may outlive its expiry (fenced for a writer still at work),
     *     whether they are still held; null: they go at the expiry
     */
    public record Held(
            String tenant,
            String namespace,
            long bytes,
            Instant expiresAt,
            @Nullable BooleanSupplier stillHeld) {

        boolean over(Instant now) {
            return expiresAt.isBefore(now) && (stillHeld == null || !stillHeld.getAsBoolean());
        }
    }

    private final Map<String, Held> held = new ConcurrentHashMap<>();
    private final Map<String, Object> locks = new ConcurrentHashMap<>();
    private final KvStoreProperties properties;
    private final long defaultBytesPerTenant;
    private final Clock clock;

    public ReservationLedger(KvStoreProperties properties, Clock clock) {
        this.properties = properties;
        this.defaultBytesPerTenant =
                (long) (properties.tiers().dram().capacity().toBytes()
                        * properties.limits().reservedFractionPerTenant());
        this.clock = clock;
    }

    /** The most {@code tenant} may hold reserved at once, in bytes. */
    public long bytesPerTenant(String tenant) {
        var q = properties.tenants().get(tenant);
        return q != null && q.reserved() != null ? q.reserved().toBytes() : defaultBytesPerTenant;
    }

    private String limitName(String tenant) {
        var q = properties.tenants().get(tenant);
        return q != null && q.reserved() != null
                ? "kvstore.tenants." + tenant + ".reserved"
                : "kvstore.limits.reserved-fraction-per-tenant of the DRAM tier";
    }

    /**
     * Bytes the tenant holds in live reservations now, fenced ones included (those over are forgotten on the
     * way).
     */
    public long reservedBy(String tenant) {
        Instant now = clock.instant();
        long sum = 0;
        for (var e : held.entrySet()) {
            Held h = e.getValue();
            if (h.over(now)) {
                held.remove(e.getKey(), h);
            } else if (h.tenant().equals(tenant)) {
                sum += h.bytes();
            }
        }
        return sum;
    }

    /**
     * Admits a reservation of {@code bytes} for the tenant when it fits its share and {@code quota} accepts
     * it, holding the bytes under a provisional key until {@link #confirm} (or {@link #done} when the
     * reservation failed), so two concurrent reservations cannot both pass either check. {@code quota} is
     * given the bytes the tenant already holds in open reservations and throws to refuse.
     *
     * @throws TooManyRequestsException when the tenant's share would be passed
     */
    public String admit(String tenant, String namespace, long bytes, Instant expiresAt, LongConsumer quota) {
        synchronized (locks.computeIfAbsent(tenant, t -> new Object())) {
            long already = reservedBy(tenant);
            quota.accept(already);
            long limit = bytesPerTenant(tenant);
            if (already + bytes > limit) {
                throw new TooManyRequestsException("tenant '" + tenant + "' holds " + already + " bytes in "
                        + "uncommitted reservations; " + bytes + " more would pass its reserved quota of " + limit
                        + " bytes (" + limitName(tenant) + "): commit or cancel first");
            }
            String key = "pending-" + UUID.randomUUID();
            held.put(key, new Held(tenant, namespace, bytes, expiresAt, null));
            return key;
        }
    }

    /**
     * Runs {@code check} under the tenant's admission lock with the bytes it holds in open reservations, so a
     * store beside {@link #admit} sees the slots reserved and the reservation sees the store's charge.
     */
    public <T> T withReserved(String tenant, LongFunction<T> check) {
        synchronized (locks.computeIfAbsent(tenant, t -> new Object())) {
            return check.apply(reservedBy(tenant));
        }
    }

    /**
     * Turns an admitted provisional entry into the engine's reservation; {@code stillHeld}, when given, tells
     * whether its slots are still held past {@code expiresAt} (a fenced reservation counts until they go).
     */
    public void confirm(
            String provisional,
            String reservationId,
            long bytes,
            Instant expiresAt,
            @Nullable BooleanSupplier stillHeld) {
        Held h = held.get(provisional);
        if (h != null) {
            // the new entry first: the tenant's sum never dips below what it holds
            held.put(reservationId, new Held(h.tenant(), h.namespace(), bytes, expiresAt, stillHeld));
            held.remove(provisional);
        }
    }

    /** The reservation's holder, or null when the ledger does not know it (never made, done or expired). */
    public @Nullable Held get(String reservationId) {
        return held.get(reservationId);
    }

    /** Whether a live reservation (or one being admitted) holds slots for blocks of {@code namespace}. */
    public boolean openIn(String namespace) {
        Instant now = clock.instant();
        for (Held h : held.values()) {
            if (h.namespace().equals(namespace) && !h.expiresAt().isBefore(now)) {
                return true;
            }
        }
        return false;
    }

    public void done(String reservationId) {
        held.remove(reservationId);
    }
}
