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
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
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
    private final Consumer<List<BlockKey>> holdsEnded;
    private final Map<String, Held> leases = new ConcurrentHashMap<>();
    /** Blocks each owner holds leased now (the blocks of its open leases, a block counted once per lease). */
    private final Map<String, AtomicLong> leasedBy = new ConcurrentHashMap<>();

    /**
     * A lease, the catalog entries it counted itself on (releasing it releases those entries, not the key's
     * current ones: a block dropped and stored again is a new entry, not this lease's) and whose it is.
     */
    private record Held(Lease lease, List<CatalogEntry> entries, String owner) {}

    /** @param holdsEnded told of the blocks whose pin or lease just ended, so eviction may take them again */
    LeaseTable(Catalog catalog, Clock clock, Duration defaultTimeout, Consumer<List<BlockKey>> holdsEnded) {
        this.catalog = catalog;
        this.clock = clock;
        this.defaultTimeout = defaultTimeout;
        this.holdsEnded = holdsEnded;
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
        List<BlockKey> unpinned = new ArrayList<>(keys.size());
        for (BlockKey key : keys) {
            CatalogEntry entry = catalog.get(key);
            if (entry != null && entry.unpin()) {
                unpinned.add(key);
            }
        }
        holdsEnded.accept(unpinned);
        return unpinned.size();
    }

    /**
     * Leases the leading resident blocks of {@code keys} (stopping at the first that is not resident)
     * until released or until {@code timeout} (the default when null) passes.
     */
    Lease lease(List<BlockKey> keys, @Nullable Duration timeout) {
        return lease(keys, timeout, "", Long.MAX_VALUE);
    }

    /**
     * As {@link #lease(List, Duration)}, for {@code owner}, who may hold at most {@code maxBlocksPerOwner}
     * leased blocks at once: every lease is memory the service keeps until it ends, and blocks no eviction can
     * take, so one owner must not be able to hold without bound.
     *
     * @throws LeaseLimitException when the lease would take the owner past its limit (nothing is leased)
     */
    Lease lease(List<BlockKey> keys, @Nullable Duration timeout, String owner, long maxBlocksPerOwner) {
        AtomicLong count = leasedBy.computeIfAbsent(owner, o -> new AtomicLong());
        long asked = keys.size();
        long before = count.getAndAdd(asked); // counted up front, so two leases at once cannot both pass
        if (before + asked > maxBlocksPerOwner) {
            count.addAndGet(-asked);
            throw new LeaseLimitException(owner, before, asked, maxBlocksPerOwner);
        }
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
        count.addAndGet(heldKeys.size() - asked);
        leases.put(lease.id(), new Held(lease, entries, owner));
        return lease;
    }

    /** Releases a lease; false when it is unknown (already released or expired). */
    boolean release(String leaseId) {
        Held held = leases.remove(leaseId);
        if (held == null) {
            return false;
        }
        List<BlockKey> released = new ArrayList<>(held.entries().size());
        for (CatalogEntry entry : held.entries()) {
            entry.release();
            released.add(entry.key());
        }
        holdsEnded.accept(released);
        AtomicLong count = leasedBy.get(held.owner());
        if (count != null) {
            count.addAndGet(-held.entries().size());
        }
        return true;
    }

    @Nullable
    Lease get(String leaseId) {
        Held held = leases.get(leaseId);
        return held == null ? null : held.lease();
    }

    int size() {
        return leases.size();
    }

    /** Blocks {@code owner} holds leased now. */
    long leasedBlocks(String owner) {
        AtomicLong count = leasedBy.get(owner);
        return count == null ? 0 : count.get();
    }

    /** Releases every lease whose time ran out before {@code now}; returns how many. */
    int expire(Instant now) {
        int expired = 0;
        for (Held held : leases.values()) {
            if (held.lease().expiresAt().isBefore(now) && release(held.lease().id())) {
                expired++;
            }
        }
        return expired;
    }
}
