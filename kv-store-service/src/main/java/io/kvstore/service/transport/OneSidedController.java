package io.kvstore.service.transport;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.engine.CommitReport;
import io.kvstore.engine.InPlaceBlock;
import io.kvstore.engine.Reservation;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.blocks.BlockService;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.ForbiddenException;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.metrics.EngineMetrics;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.quota.ReservationLedger;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TenantGuard;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The one-sided path under {@code /v1}: the transport an engine connects to, slots reserved for its
 * WRITEs, and the commit that checksums them and makes them visible. Leased lookups carry the READ
 * descriptors (see the lookup endpoint).
 */
@RestController
@RequestMapping("/v1")
public class OneSidedController {

    private final TransportService transport;
    private final TierEngine engine;
    private final NamespaceRegistry namespaces;
    private final BlockService blocks;
    private final EngineMetrics metrics;
    private final TenantGuard guard;
    private final ReservationLedger ledger;
    private final Duration maxReservation;
    private final Duration defaultReservation;
    private final int maxBlocks;

    public OneSidedController(
            TransportService transport,
            TierEngine engine,
            NamespaceRegistry namespaces,
            BlockService blocks,
            EngineMetrics metrics,
            TenantGuard guard,
            ReservationLedger ledger,
            KvStoreProperties properties) {
        this.transport = transport;
        this.engine = engine;
        this.namespaces = namespaces;
        this.blocks = blocks;
        this.metrics = metrics;
        this.guard = guard;
        this.ledger = ledger;
        this.maxReservation = properties.limits().maxReservationTimeout();
        this.defaultReservation =
                properties.leaseTimeout().compareTo(maxReservation) < 0 ? properties.leaseTimeout() : maxReservation;
        this.maxBlocks = properties.limits().maxBlocksPerRequest();
    }

    /** One block to reserve: its hash and its parent's (absent for a prompt's first block). */
    public record ReserveBlock(String hash, String parent) {}

    /** @param timeoutSeconds how long the slots wait for the commit; default {@code kvstore.lease-timeout} */
    public record ReserveRequest(List<ReserveBlock> blocks, Long timeoutSeconds) {}

    /** Where to WRITE one block: an address in the registered region of {@code tier}. */
    public record SlotView(String hash, long address, int length) {}

    public record ReserveResponse(
            String reservationId, Instant expiresAt, String tier, List<SlotView> slots, List<String> alreadyStored) {}

    /** @param crc32c per block hash, the CRC32C (unsigned 32-bit) of the bytes the engine wrote; optional per block */
    public record CommitRequest(String reservationId, Map<String, Long> crc32c) {}

    public record Failure(String hash, String reason) {}

    public record CommitResponse(List<String> committed, List<String> alreadyStored, List<Failure> failed) {}

    @GetMapping("/transport")
    public TransportService.View transport(@RequestAttribute(Caller.ATTRIBUTE) Caller caller) {
        guard.requireOneSided(caller);
        return transport.view();
    }

    @PostMapping(path = "/namespaces/{ns}/blocks:reserve", consumes = MediaType.APPLICATION_JSON_VALUE)
    public ReserveResponse reserve(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @RequestBody ReserveRequest request)
            throws IOException {
        guard.requireWrite(caller, ns);
        guard.requireOneSided(caller);
        NamespaceSpec spec = namespaces.require(ns);
        transport.requireAvailable();
        if (request.blocks() == null || request.blocks().isEmpty()) {
            throw new InvalidRequestException("blocks", "blocks must list at least one block to reserve");
        }
        if (request.blocks().size() > maxBlocks) {
            throw new InvalidRequestException(
                    "blocks",
                    "blocks lists " + request.blocks().size() + " blocks; at most " + maxBlocks
                            + " per request (kvstore.limits.max-blocks-per-request)");
        }
        Duration timeout = defaultReservation;
        if (request.timeoutSeconds() != null) {
            if (request.timeoutSeconds() < 1 || request.timeoutSeconds() > maxReservation.toSeconds()) {
                throw new InvalidRequestException(
                        "timeoutSeconds",
                        "timeoutSeconds must be 1 to " + maxReservation.toSeconds()
                                + " (kvstore.limits.max-reservation-timeout), got " + request.timeoutSeconds());
            }
            timeout = Duration.ofSeconds(request.timeoutSeconds());
        }
        List<String> hashes = new ArrayList<>();
        List<String> parents = new ArrayList<>();
        for (int i = 0; i < request.blocks().size(); i++) {
            ReserveBlock b = request.blocks().get(i);
            if (b == null || b.hash() == null) {
                throw new InvalidRequestException("blocks[" + i + "].hash", "blocks[" + i + "].hash is required");
            }
            hashes.add(b.hash());
            parents.add(b.parent());
        }
        List<BlockHash> keys = blocks.parseHashes(spec, hashes, "blocks[].hash");
        List<InPlaceBlock> wanted = new ArrayList<>();
        Map<BlockHash, BlockHash> batch = new HashMap<>();
        for (int i = 0; i < keys.size(); i++) {
            BlockHash parent = parents.get(i) == null
                    ? null
                    : blocks.parseHashes(spec, List.of(parents.get(i)), "blocks[" + i + "].parent")
                            .getFirst();
            if (parent != null) {
                blocks.refuseCycle(ns, keys.get(i), parent, batch);
                batch.put(keys.get(i), parent);
            }
            wanted.add(new InPlaceBlock(new BlockKey(ns, keys.get(i)), parent, spec.blockBytes()));
        }
        Reservation r;
        String admitted = ledger.admit(
                caller.tenant(),
                ns,
                (long) wanted.size() * spec.blockBytes(),
                java.time.Instant.now().plus(timeout));
        try {
            r = engine.reserve(wanted, TransportService.TIER, timeout);
        } catch (IllegalArgumentException e) {
            ledger.done(admitted);
            throw new InvalidRequestException("blocks", e.getMessage());
        } catch (IOException | RuntimeException e) {
            ledger.done(admitted);
            throw e;
        }
        ledger.confirm(admitted, r.id(), (long) r.slots().size() * spec.blockBytes(), r.expiresAt());
        List<SlotView> slots = new ArrayList<>();
        for (Reservation.Slot slot : r.slots()) {
            slots.add(new SlotView(
                    slot.block().key().hash().hex(),
                    transport.address(slot.offset()),
                    slot.block().length()));
        }
        return new ReserveResponse(
                r.id(),
                r.expiresAt(),
                r.tier().name(),
                slots,
                r.alreadyStored().stream().map(k -> k.hash().hex()).toList());
    }

    @PostMapping(path = "/namespaces/{ns}/blocks:commit", consumes = MediaType.APPLICATION_JSON_VALUE)
    public CommitResponse commit(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @RequestBody CommitRequest request) {
        guard.requireWrite(caller, ns);
        guard.requireOneSided(caller);
        NamespaceSpec spec = namespaces.require(ns);
        if (request.reservationId() == null) {
            throw new InvalidRequestException("reservationId", "reservationId is required");
        }
        requireHolder(caller, request.reservationId());
        Map<BlockKey, Integer> crcs = new HashMap<>();
        if (request.crc32c() != null) {
            for (var e : request.crc32c().entrySet()) {
                String field = "crc32c." + e.getKey();
                BlockHash hash =
                        blocks.parseHashes(spec, List.of(e.getKey()), field).getFirst();
                if (e.getValue() == null || e.getValue() < 0 || e.getValue() > 0xFFFF_FFFFL) {
                    throw new InvalidRequestException(
                            field, field + " must be an unsigned 32-bit CRC32C, got " + e.getValue());
                }
                crcs.put(new BlockKey(ns, hash), (int) (long) e.getValue());
            }
        }
        CommitReport report;
        long start = System.nanoTime();
        try {
            report = engine.commit(request.reservationId(), crcs);
        } catch (io.kvstore.engine.UnknownReservationException e) {
            ledger.done(request.reservationId());
            throw new NotFoundException(e.getMessage());
        }
        ledger.done(request.reservationId());
        if (!report.committed().isEmpty()) {
            // bytes engines wrote in place, counted when they become blocks (the WRITE itself is one-sided)
            metrics.transfer(
                    "ENGINE",
                    TransportService.TIER.name(),
                    transport.backend(),
                    (long) report.committed().size() * spec.blockBytes(),
                    System.nanoTime() - start);
        }
        List<Failure> failed = new ArrayList<>();
        report.failed()
                .forEach((key, reason) -> failed.add(new Failure(key.hash().hex(), reason)));
        return new CommitResponse(
                report.committed().stream().map(k -> k.hash().hex()).toList(),
                report.alreadyStored().stream().map(k -> k.hash().hex()).toList(),
                failed);
    }

    @DeleteMapping("/reservations/{id}")
    public ResponseEntity<Void> cancel(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @PathVariable("id") String id) {
        requireHolder(caller, id);
        ledger.done(id);
        if (!engine.cancel(id)) {
            throw new NotFoundException(
                    "reservation " + id + " is unknown: never made, already committed or " + "cancelled, or expired");
        }
        return ResponseEntity.noContent().build();
    }

    /** Only the tenant that made a reservation commits or cancels it. */
    private void requireHolder(Caller caller, String reservationId) {
        ReservationLedger.Held held = ledger.get(reservationId);
        if (held != null && !held.tenant().equals(caller.tenant())) {
            throw new ForbiddenException("reservation " + reservationId + " belongs to another tenant");
        }
    }
}
