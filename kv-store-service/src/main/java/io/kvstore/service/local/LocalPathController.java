package io.kvstore.service.local;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.block.TierId;
import io.kvstore.engine.Lease;
import io.kvstore.engine.Reservation;
import io.kvstore.engine.SlotLocation;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.blocks.CommitRequest;
import io.kvstore.service.blocks.CommitResponse;
import io.kvstore.service.blocks.OneSidedService;
import io.kvstore.service.blocks.ReserveRequest;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TenantGuard;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotNull;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
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

    private static final TierId TIER = TierId.DRAM;

    private final LocalDataPath local;
    private final OneSidedService oneSided;
    private final TierEngine engine;
    private final TenantGuard guard;

    public LocalPathController(LocalDataPath local, OneSidedService oneSided, TierEngine engine, TenantGuard guard) {
        this.local = local;
        this.oneSided = oneSided;
        this.engine = engine;
        this.guard = guard;
    }

    /** Where to copy one block: {@code offset} bytes into the tier's file. */
    public record Slot(String hash, long offset, int length) {}

    public record ReserveResponse(
            String regionId, String reservationId, Instant expiresAt, List<Slot> slots, List<String> alreadyStored) {}

    /** @param blockHashes the blocks to hold, in order; the leading ones stored are leased */
    public record LeaseRequest(
            @NotNull(message = "is required") List<String> blockHashes,
            @Nullable Long timeoutSeconds) {}

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
            @Valid @RequestBody ReserveRequest request)
            throws IOException {
        Reservation r = oneSided.reserve(caller, ns, request, TIER, local::requireAvailable)
                .reservation();
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
            @Valid @RequestBody CommitRequest request) {
        return oneSided.commit(caller, ns, request, TIER, "SHM");
    }

    @PostMapping(path = "/namespaces/{ns}/blocks:lease", consumes = MediaType.APPLICATION_JSON_VALUE)
    public LeaseResponse lease(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @Valid @RequestBody LeaseRequest request) {
        Lease lease =
                oneSided.lease(caller, ns, request.blockHashes(), request.timeoutSeconds(), local::requireAvailable);
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
}
