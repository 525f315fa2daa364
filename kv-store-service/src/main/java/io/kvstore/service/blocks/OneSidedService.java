package io.kvstore.service.blocks;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.CommitReport;
import io.kvstore.engine.InPlaceBlock;
import io.kvstore.engine.Lease;
import io.kvstore.engine.Reservation;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.UnknownReservationException;
import io.kvstore.engine.WriterState;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.ConflictException;
import io.kvstore.service.error.ForbiddenException;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.metrics.EngineMetrics;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.quota.ReservationLedger;
import io.kvstore.service.quota.TenantUsage;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TenantGuard;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.stereotype.Service;

/**
 * What the engine API does for blocks an engine moves itself, beside {@link BlockService} for the blocks it
 * sends over HTTP: reservations of tier slots (tenant rules, per-tenant limits, parent checks), the commit
 * that checksums the written bytes and makes them visible, and leases of stored blocks to read in place. The
 * one-sided (UCX/NIXL) and the same-host file paths share it; they differ only in how they name a slot.
 */
@Service
public class OneSidedService {

    private final TierEngine engine;
    private final NamespaceRegistry namespaces;
    private final BlockService blocks;
    private final EngineMetrics metrics;
    private final TenantGuard guard;
    private final ReservationLedger ledger;
    private final TenantUsage usage;
    private final Duration maxHold;
    private final Duration defaultHold;
    private final int maxBlocks;

    public OneSidedService(
            TierEngine engine,
            NamespaceRegistry namespaces,
            BlockService blocks,
            EngineMetrics metrics,
            TenantGuard guard,
            ReservationLedger ledger,
            TenantUsage usage,
            KvStoreProperties properties) {
        this.usage = usage;
        this.engine = engine;
        this.namespaces = namespaces;
        this.blocks = blocks;
        this.metrics = metrics;
        this.guard = guard;
        this.ledger = ledger;
        this.maxHold = properties.limits().maxReservationTimeout();
        this.defaultHold = properties.leaseTimeout().compareTo(maxHold) < 0 ? properties.leaseTimeout() : maxHold;
        this.maxBlocks = properties.limits().maxBlocksPerRequest();
    }

    /** A reservation and the layout of the namespace it was made in. */
    public record Reserved(NamespaceSpec spec, Reservation reservation) {}

    /**
     * Reserves slots in {@code tier} for the blocks of {@code request} not stored yet. The caller must be
     * allowed to write {@code ns} and to use the one-sided paths; {@code requireAvailable} then says whether
     * the data path is up.
     */
    public Reserved reserve(Caller caller, String ns, ReserveRequest request, TierId tier, Runnable requireAvailable)
            throws IOException {
        return reserve(caller, ns, request, tier, requireAvailable, null);
    }

    /**
     * As {@link #reserve(Caller, String, ReserveRequest, TierId, Runnable)}, for a writer that can tell whether
     * it may still be writing: the slots then outlive the reservation's expiry while {@code writer} answers
     * {@link WriterState#FENCED} (see {@link TierEngine#reserve(List, TierId, Duration, Supplier)}), and
     * count against the tenant's reserved bytes until they go.
     */
    public Reserved reserve(
            Caller caller,
            String ns,
            ReserveRequest request,
            TierId tier,
            Runnable requireAvailable,
            @Nullable Supplier<WriterState> writer)
            throws IOException {
        guard.requireWrite(caller, ns);
        guard.requireOneSided(caller);
        NamespaceSpec spec = namespaces.require(ns);
        requireAvailable.run();
        if (request.blocks().size() > maxBlocks) {
            throw new InvalidRequestException(
                    "blocks",
                    "blocks lists " + request.blocks().size() + " blocks; at most " + maxBlocks
                            + " per request (kvstore.limits.max-blocks-per-request)");
        }
        Duration timeout = hold(request.timeoutSeconds());
        List<InPlaceBlock> wanted = new ArrayList<>(request.blocks().size());
        Map<BlockHash, BlockHash> parents = new HashMap<>();
        for (int i = 0; i < request.blocks().size(); i++) {
            ReserveRequest.Block b = request.blocks().get(i);
            BlockHash hash = blocks.parseHash(spec, b.hash(), "blocks[" + i + "].hash");
            BlockHash parent =
                    b.parent() == null ? null : blocks.parseHash(spec, b.parent(), "blocks[" + i + "].parent");
            if (parent != null) {
                blocks.refuseCycle(ns, hash, parent, parents);
                parents.put(hash, parent);
            }
            wanted.add(new InPlaceBlock(new BlockKey(ns, hash), parent, spec.blockBytes()));
        }
        long asked = (long) wanted.size() * spec.blockBytes();
        // until the reservation is in the ledger: a delete of the namespace waits for it, then sees it open
        try (NamespaceRegistry.Write write = beginWrite(ns, spec)) {
            return reserve(caller.tenant(), ns, spec, wanted, asked, tier, timeout, writer);
        }
    }

    private Reserved reserve(
            String tenant,
            String ns,
            NamespaceSpec spec,
            List<InPlaceBlock> wanted,
            long asked,
            TierId tier,
            Duration timeout,
            @Nullable Supplier<WriterState> writer)
            throws IOException {
        // the tenant's quota in the tier the slots are in, counting its open reservations (507), then
        // its reserved quota (429), both under the tenant's admission lock
        String admitted = ledger.admit(
                tenant, ns, asked, Instant.now().plus(timeout), pending -> usage.require(ns, tier, asked, pending));
        Reservation r;
        try {
            r = writer == null ? engine.reserve(wanted, tier, timeout) : engine.reserve(wanted, tier, timeout, writer);
        } catch (IllegalArgumentException e) {
            ledger.done(admitted);
            throw new InvalidRequestException("blocks", e.getMessage());
        } catch (IOException | RuntimeException e) {
            ledger.done(admitted);
            throw e;
        }
        String id = r.id();
        ledger.confirm(
                admitted,
                id,
                (long) r.slots().size() * spec.blockBytes(),
                r.expiresAt(),
                writer == null ? null : () -> engine.holdsReservation(id));
        return new Reserved(spec, r);
    }

    /**
     * Checks the CRC32C of each reserved block the engine wrote and makes the good ones visible; counts the
     * committed bytes as a transfer from the engine into {@code tier} over {@code backend}.
     */
    public CommitResponse commit(Caller caller, String ns, CommitRequest request, TierId tier, String backend) {
        guard.requireWrite(caller, ns);
        guard.requireOneSided(caller);
        NamespaceSpec spec = namespaces.require(ns);
        Map<BlockKey, Integer> crcs = new HashMap<>();
        if (request.crc32c() != null) {
            for (var e : request.crc32c().entrySet()) {
                String field = "crc32c." + e.getKey();
                BlockHash hash = blocks.parseHash(spec, e.getKey(), field);
                if (e.getValue() == null || e.getValue() < 0 || e.getValue() > 0xFFFF_FFFFL) {
                    throw new InvalidRequestException(
                            field, field + " must be an unsigned 32-bit CRC32C, got " + e.getValue());
                }
                crcs.put(new BlockKey(ns, hash), (int) (long) e.getValue());
            }
        }
        ReservationLedger.Held held = requireHolder(caller, request.reservationId());
        if (!held.namespace().equals(ns)) {
            // the reservation's blocks are keyed to its own namespace, which may since have been deleted
            // and declared again by another tenant: commit only through the namespace it was made in
            throw new ForbiddenException("reservation " + request.reservationId() + " was made in namespace '"
                    + held.namespace() + "', not '" + ns + "'");
        }
        long start = System.nanoTime();
        CommitReport report;
        // the blocks become visible before a delete of the namespace deletes its blocks, or not at all (refused
        // here, the reservation stays open: a delete that refused this commit is itself refused while it is)
        NamespaceRegistry.Write write = beginWrite(ns, spec);
        try (write) {
            // the ledger forgets the reservation before the write ends: a delete that waited for this commit then
            // finds it done, not open (the resources close before a finally runs)
            try {
                if (held.expiresAt().isBefore(Instant.now())) {
                    // past its expiry a delete of the namespace no longer waits for it (ReservationLedger#openIn):
                    // its blocks could land in a declaration of the name made since. Refused; its writer is done
                    // with the slots, so they go back now rather than at the engine's next sweep
                    engine.cancel(request.reservationId());
                    throw new NotFoundException("reservation " + request.reservationId() + " expired at "
                            + held.expiresAt() + ", before its commit; reserve again");
                }
                report = engine.commit(request.reservationId(), crcs);
            } finally {
                ledger.done(request.reservationId());
            }
        } catch (UnknownReservationException e) {
            throw new NotFoundException(e.getMessage());
        }
        if (!report.committed().isEmpty()) {
            // bytes the engine wrote itself, counted when they become blocks
            metrics.transfer(
                    "ENGINE",
                    tier.name(),
                    backend,
                    (long) report.committed().size() * spec.blockBytes(),
                    System.nanoTime() - start);
        }
        List<CommitResponse.Failure> failed = new ArrayList<>(report.failed().size());
        report.failed()
                .forEach((key, reason) ->
                        failed.add(new CommitResponse.Failure(key.hash().hex(), reason)));
        return new CommitResponse(hexes(report.committed()), hexes(report.alreadyStored()), failed);
    }

    /**
     * A write into {@code ns} as declared with {@code spec} (see {@link NamespaceRegistry#beginWrite}); 409 when
     * refused.
     */
    private NamespaceRegistry.Write beginWrite(String ns, NamespaceSpec spec) {
        NamespaceRegistry.Write write = namespaces.beginWrite(ns, spec);
        if (write == null) {
            throw new ConflictException("namespace '" + ns + "' is being deleted, or was deleted or declared again"
                    + " since this request began");
        }
        return write;
    }

    /** Gives a reservation's slots back before its commit; only the tenant that made it may. */
    public void cancel(Caller caller, String reservationId) {
        requireHolder(caller, reservationId);
        ledger.done(reservationId);
        if (!engine.cancel(reservationId)) {
            throw new NotFoundException("reservation " + reservationId
                    + " is unknown: never made, already committed or cancelled, or expired");
        }
    }

    /**
     * Leases the stored leading blocks of {@code blockHashes} so they stay where they are while the engine
     * reads them in place; the lease holds nothing when none is stored.
     */
    public Lease lease(
            Caller caller,
            String ns,
            List<String> blockHashes,
            @Nullable Long timeoutSeconds,
            Runnable requireAvailable) {
        guard.requireRead(caller, ns);
        guard.requireOneSided(caller);
        NamespaceSpec spec = namespaces.require(ns);
        requireAvailable.run();
        List<BlockHash> hashes = blocks.parseHashes(spec, blockHashes, "blockHashes");
        List<BlockKey> keys = BlockService.keys(ns, hashes);
        return blocks.lease(ns, keys, hold(timeoutSeconds));
    }

    /** Releases a lease; only who may read the namespace of its blocks may (an unknown id is 404). */
    public void release(Caller caller, String leaseId) {
        Lease lease = engine.leaseById(leaseId);
        if (lease != null) {
            guard.requireLeaseAccess(caller, lease);
        }
        blocks.release(leaseId);
    }

    /** How long a reservation or lease holds: {@code timeoutSeconds} within the configured cap, else the default. */
    private Duration hold(@Nullable Long timeoutSeconds) {
        if (timeoutSeconds == null) {
            return defaultHold;
        }
        if (timeoutSeconds < 1 || timeoutSeconds > maxHold.toSeconds()) {
            throw new InvalidRequestException(
                    "timeoutSeconds",
                    "timeoutSeconds must be 1 to " + maxHold.toSeconds()
                            + " (kvstore.limits.max-reservation-timeout), got " + timeoutSeconds);
        }
        return Duration.ofSeconds(timeoutSeconds);
    }

    /**
     * Only the tenant that made a reservation commits or cancels it; one the ledger does not know (never
     * made, done, or expired though not yet swept from the engine) is 404 for everyone.
     */
    private ReservationLedger.Held requireHolder(Caller caller, String reservationId) {
        ReservationLedger.Held held = ledger.get(reservationId);
        if (held == null) {
            throw new NotFoundException("reservation " + reservationId
                    + " is unknown: never made, already committed or cancelled, or expired");
        }
        if (!held.tenant().equals(caller.tenant())) {
            throw new ForbiddenException("reservation " + reservationId + " belongs to another tenant");
        }
        return held;
    }

    private static List<String> hexes(List<BlockKey> keys) {
        List<String> out = new ArrayList<>(keys.size());
        for (BlockKey k : keys) {
            out.add(k.hash().hex());
        }
        return out;
    }
}
