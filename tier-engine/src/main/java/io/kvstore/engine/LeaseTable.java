package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import io.kvstore.catalog.Catalog;
import io.kvstore.catalog.CatalogEntry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * What holds blocks in place against eviction and moves: pins (until unpinned, by an operator) and
 * leases (for one engine's read, until released or until they expire, so an engine that vanishes never
 * holds memory for ever). The holds themselves are counted on each block's catalog entry; this table
 * keeps which lease holds which blocks.
 */
final class LeaseTable {

    private final Catalog catalog;
    private final Clock clock;
    private final Duration defaultTimeout;
    private final Map<String, Lease> leases = new ConcurrentHashMap<>();
    /** The entries each lease counted itself on: a later entry of the same key is not this lease's. */
    private final Map<String, List<CatalogEntry>> held = new ConcurrentHashMap<>();

    LeaseTable(Catalog catalog, Clock clock, Duration defaultTimeout) {
        this.catalog = catalog;
        this.clock = clock;
        this.defaultTimeout = defaultTimeout;
    }

    /** Pins the resident blocks among {@code keys}; returns how many. */
    int pin(List<BlockKey> keys) {
        int n = 0;
        for (BlockKey key : keys) {
            CatalogEntry entry = catalog.get(key);
            if (entry != null && entry.pin()) {
                n++;
            }
        }
        return n;
    }

    int unpin(List<BlockKey> keys) {
        int n = 0;
        for (BlockKey key : keys) {
            CatalogEntry entry = catalog.get(key);
            if (entry != null && entry.unpin()) {
                n++;
            }
        }
        return n;
    }

    /**
     * Leases the leading resident blocks of {@code keys} (stopping at the first that is not resident)
     * until released or until {@code timeout} (the default when null) passes.
     */
    Lease lease(List<BlockKey> keys, @Nullable Duration timeout) {
        List<BlockKey> heldKeys = new ArrayList<>(keys.size());
        List<CatalogEntry> entries = new ArrayList<>(keys.size());
        for (BlockKey key : keys) {
            CatalogEntry entry = catalog.get(key);
            if (entry == null || !entry.lease()) {
                break;
            }
            heldKeys.add(key);
            entries.add(entry);
        }
        Lease lease = new Lease(
                UUID.randomUUID().toString(),
                heldKeys,
                clock.instant().plus(timeout == null ? defaultTimeout : timeout));
        held.put(lease.id(), entries);
        leases.put(lease.id(), lease);
        return lease;
    }

    /** Releases a lease; false when it is unknown (already released or expired). */
    boolean release(String leaseId) {
        Lease lease = leases.remove(leaseId);
        if (lease == null) {
            return false;
        }
        List<CatalogEntry> entries = held.remove(leaseId);
        if (entries != null) {
            for (CatalogEntry entry : entries) {
                entry.release();
            }
        }
        return true;
    }

    @Nullable
    Lease get(String leaseId) {
        return leases.get(leaseId);
    }

    int size() {
        return leases.size();
    }

    /** Releases every lease whose time ran out before {@code now}; returns how many. */
    int expire(Instant now) {
        int expired = 0;
        for (Lease lease : leases.values()) {
            if (lease.expiresAt().isBefore(now) && release(lease.id())) {
                expired++;
            }
        }
        return expired;
    }
}
