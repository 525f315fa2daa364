package io.kvstore.service.local;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.CommitReport;
import io.kvstore.engine.InPlaceBlock;
import io.kvstore.engine.Lease;
import io.kvstore.engine.Reservation;
import io.kvstore.engine.SlotLocation;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.UnknownReservationException;
import io.kvstore.service.blocks.BlockService;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.metrics.EngineMetrics;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TenantGuard;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The same-host data path under {@code /v1/local}: where the DRAM tier's file is, slots to copy blocks
 * into (reserve, then commit with each block's CRC32C, checked in place before the block is visible), and
 * leases of stored blocks with where each lies (copy out, check the CRC32C, release with
 * {@code DELETE /v1/leases/{id}}). Offsets are bytes into the file, so they hold in any process's mapping.
 */
@RestController
@RequestMapping("/v1/local")
public class LocalPathController {

    private static final Duration MAX_HOLD = Duration.ofHours(1);
    private static final TierId TIER = TierId.DRAM;

    private final LocalDataPath local;
    private final TierEngine engine;
    private final NamespaceRegistry namespaces;
    private final BlockService blocks;
    private final EngineMetrics metrics;
    private final TenantGuard guard;

    public LocalPathController(
            LocalDataPath local,
            TierEngine engine,
            NamespaceRegistry namespaces,
            BlockService blocks,
            EngineMetrics metrics,
            TenantGuard guard) {
        this.local = local;
        this.engine = engine;
        this.namespaces = namespaces;
        this.blocks = blocks;
        this.metrics = metrics;
        this.guard = guard;
    }

    /** One block to reserve: its hash and its parent's (absent for a prompt's first block). */
    public record ReserveBlock(String hash, @Nullable String parent) {}

    /** @param timeoutSeconds how long the slots wait for the commit; default {@code kvstore.lease-timeout} */
    public record ReserveRequest(
            List<ReserveBlock> blocks, @Nullable Long timeoutSeconds) {}

    /** Where to copy one block: {@code offset} bytes into the tier's file. */
    public record Slot(String hash, long offset, int length) {}

    public record ReserveResponse(
            String regionId, String reservationId, Instant expiresAt, List<Slot> slots, List<String> alreadyStored) {}

    /** @param crc32c per block hash, the CRC32C (unsigned 32-bit) of the bytes copied in; optional per block */
    public record CommitRequest(
            String reservationId, @Nullable Map<String, Long> crc32c) {}

    public record Failure(String hash, String reason) {}

    public record CommitResponse(List<String> committed, List<String> alreadyStored, List<Failure> failed) {}

    /** @param blockHashes the blocks to hold, in order; the leading ones stored are leased */
    public record LeaseRequest(
            List<String> blockHashes, @Nullable Long timeoutSeconds) {}

    /**
     * A leased block: where its bytes lie in the tier's file and the CRC32C they must have; offset absent
     * when the block is held only in a tier local engines do not map (NVMe: fetch it over HTTP).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Location(
            String hash,
            @Nullable Long offset,
            int length,
            @Nullable Long crc32c) {}

    /** @param leaseId null when none of the blocks is stored (nothing is held) */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record LeaseResponse(
            String regionId,
            @Nullable String leaseId,
            @Nullable Instant expiresAt,
            List<Location> locations) {}

    @GetMapping
    public LocalDataPath.View describe(@RequestAttribute(Caller.ATTRIBUTE) Caller caller) {
        // the mapped file holds all of DRAM, every tenant's blocks: like the one-sided region key
        guard.requireOneSided(caller);
        return local.view();
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
        local.requireAvailable();
        if (request.blocks() == null || request.blocks().isEmpty()) {
            throw new InvalidRequestException("blocks", "blocks must list at least one block to reserve");
        }
        List<InPlaceBlock> wanted = new ArrayList<>(request.blocks().size());
        for (int i = 0; i < request.blocks().size(); i++) {
            ReserveBlock b = request.blocks().get(i);
            if (b == null || b.hash() == null) {
                throw new InvalidRequestException("blocks[" + i + "].hash", "blocks[" + i + "].hash is required");
            }
            BlockHash hash = one(spec, b.hash(), "blocks[" + i + "].hash");
            BlockHash parent = b.parent() == null ? null : one(spec, b.parent(), "blocks[" + i + "].parent");
            wanted.add(new InPlaceBlock(new BlockKey(ns, hash), parent, spec.blockBytes()));
        }
        Reservation r;
        try {
            r = engine.reserve(wanted, TIER, timeout(request.timeoutSeconds()));
        } catch (IllegalArgumentException e) {
            throw new InvalidRequestException("blocks", e.getMessage());
        }
        List<Slot> slots = new ArrayList<>(r.slots().size());
        for (Reservation.Slot slot : r.slots()) {
            slots.add(new Slot(
                    slot.block().key().hash().hex(), slot.offset(), slot.block().length()));
        }
        return new ReserveResponse(
                local.regionId(),
                r.id(),
                r.expiresAt(),
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
        Map<BlockKey, Integer> crcs = new HashMap<>();
        if (request.crc32c() != null) {
            for (var e : request.crc32c().entrySet()) {
                String field = "crc32c." + e.getKey();
                BlockHash hash = one(spec, e.getKey(), field);
                if (e.getValue() == null || e.getValue() < 0 || e.getValue() > 0xFFFF_FFFFL) {
                    throw new InvalidRequestException(
                            field, field + " must be an unsigned 32-bit CRC32C, got " + e.getValue());
                }
                crcs.put(new BlockKey(ns, hash), (int) (long) e.getValue());
            }
        }
        long start = System.nanoTime();
        CommitReport report;
        try {
            report = engine.commit(request.reservationId(), crcs);
        } catch (UnknownReservationException e) {
            throw new NotFoundException(e.getMessage());
        }
        if (!report.committed().isEmpty()) {
            // bytes local engines copied in, counted when they become blocks
            metrics.transfer(
                    "ENGINE",
                    TIER.name(),
                    "SHM",
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

    @PostMapping(path = "/namespaces/{ns}/blocks:lease", consumes = MediaType.APPLICATION_JSON_VALUE)
    public LeaseResponse lease(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @RequestBody LeaseRequest request) {
        guard.requireRead(caller, ns);
        guard.requireOneSided(caller);
        NamespaceSpec spec = namespaces.require(ns);
        local.requireAvailable();
        List<BlockHash> hashes = blocks.parseHashes(spec, request.blockHashes(), "blockHashes");
        List<BlockKey> keys = hashes.stream().map(h -> new BlockKey(ns, h)).toList();
        Lease lease = engine.lease(keys, timeout(request.timeoutSeconds()));
        if (lease.blocks().isEmpty()) {
            engine.release(lease.id());
            return new LeaseResponse(local.regionId(), null, null, List.of());
        }
        List<Location> out = new ArrayList<>(lease.blocks().size());
        for (SlotLocation slot : engine.locate(lease, TIER)) {
            out.add(
                    slot.present()
                            ? new Location(
                                    slot.key().hash().hex(),
                                    slot.offset(),
                                    slot.length(),
                                    Integer.toUnsignedLong(slot.crc32c()))
                            : new Location(slot.key().hash().hex(), null, slot.length(), null));
        }
        return new LeaseResponse(local.regionId(), lease.id(), lease.expiresAt(), out);
    }

    private static BlockHash one(NamespaceSpec spec, String hex, String field) {
        BlockHash hash;
        try {
            hash = BlockHash.ofHex(hex);
        } catch (IllegalArgumentException e) {
            throw new InvalidRequestException(field, field + ": " + e.getMessage());
        }
        if (hash.length() != spec.hashBytes()) {
            throw new InvalidRequestException(
                    field,
                    field + " has " + hash.length() + " bytes; "
                            + spec.hashScheme().wireName() + " hashes have " + spec.hashBytes());
        }
        return hash;
    }

    private static @Nullable Duration timeout(@Nullable Long seconds) {
        if (seconds == null) {
            return null;
        }
        if (seconds < 1 || seconds > MAX_HOLD.toSeconds()) {
            throw new InvalidRequestException(
                    "timeoutSeconds", "timeoutSeconds must be 1 to " + MAX_HOLD.toSeconds() + ", got " + seconds);
        }
        return Duration.ofSeconds(seconds);
    }
}
