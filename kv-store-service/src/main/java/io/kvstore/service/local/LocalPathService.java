package io.kvstore.service.local;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.block.TierId;
import io.kvstore.engine.Lease;
import io.kvstore.engine.Reservation;
import io.kvstore.engine.SlotLocation;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.WriterState;
import io.kvstore.service.blocks.CommitRequest;
import io.kvstore.service.blocks.CommitResponse;
import io.kvstore.service.blocks.OneSidedService;
import io.kvstore.service.blocks.ReserveRequest;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TenantGuard;
import jakarta.validation.constraints.NotNull;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.stereotype.Service;

/**
 * The calls of the same-host data path, whichever channel carries them: {@code /v1/local} over HTTP
 * ({@link LocalPathController}) or the local control socket ({@link ControlSocketServer}). Both answer from
 * here, so tenant rules, quotas, reservation expiry and the CRC32C check at commit are the
 * {@link OneSidedService}'s on either channel; slots and leased blocks are named by their offset into the
 * DRAM tier's file, which holds in any process's mapping.
 */
@Service
public class LocalPathService {

    private static final TierId TIER = TierId.DRAM;

    private final LocalDataPath local;
    private final OneSidedService oneSided;
    private final TierEngine engine;
    private final TenantGuard guard;

    public LocalPathService(LocalDataPath local, OneSidedService oneSided, TierEngine engine, TenantGuard guard) {
        this.local = local;
        this.oneSided = oneSided;
        this.engine = engine;
        this.guard = guard;
    }

    /** Where to copy one block: {@code offset} bytes into the tier's file. */
    public record Slot(String hash, long offset, int length) {}

    /**
     * @param writerChecksums whether the writer must commit with the CRC32C of each block it copied: always over
     *     HTTP; over the control socket only when a slot lies where an unfenced reservation expired
     */
    public record ReserveResponse(
            String regionId,
            String reservationId,
            Instant expiresAt,
            List<Slot> slots,
            List<String> alreadyStored,
            boolean writerChecksums) {}

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

    /** What {@code GET /v1/local} answers; the mapped file holds all of DRAM, so like the one-sided region key. */
    public LocalDataPath.View describe(Caller caller) {
        guard.requireOneSided(caller);
        return local.view();
    }

    public ReserveResponse reserve(Caller caller, String ns, ReserveRequest request) throws IOException {
        return reserve(caller, ns, request, null);
    }

    /**
     * As {@link #reserve(Caller, String, ReserveRequest)} for a writer whose client is known to the control
     * socket: while {@code writer} answers {@link WriterState#FENCED}, the slots are fenced off from everyone else
     * even after the reservation expired, so that client's copies can never land in another block's slot.
     */
    public ReserveResponse reserve(
            Caller caller, String ns, ReserveRequest request, @Nullable Supplier<WriterState> writer)
            throws IOException {
        Reservation r = oneSided.reserve(caller, ns, request, TIER, local::requireAvailable, writer)
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
                r.alreadyStored().stream().map(k -> k.hash().hex()).toList(),
                r.writerChecksums());
    }

    public CommitResponse commit(Caller caller, String ns, CommitRequest request) {
        return oneSided.commit(caller, ns, request, TIER, "SHM");
    }

    public void cancel(Caller caller, String reservationId) {
        oneSided.cancel(caller, reservationId);
    }

    public LeaseResponse lease(Caller caller, String ns, LeaseRequest request) {
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

    public void release(Caller caller, String leaseId) {
        oneSided.release(caller, leaseId);
    }
}
