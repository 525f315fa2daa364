package io.kvstore.service.transport;

import io.kvstore.engine.Reservation;
import io.kvstore.service.blocks.CommitRequest;
import io.kvstore.service.blocks.CommitResponse;
import io.kvstore.service.blocks.OneSidedService;
import io.kvstore.service.blocks.ReserveRequest;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TenantGuard;
import jakarta.validation.Valid;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
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
    private final OneSidedService oneSided;
    private final TenantGuard guard;

    public OneSidedController(TransportService transport, OneSidedService oneSided, TenantGuard guard) {
        this.transport = transport;
        this.oneSided = oneSided;
        this.guard = guard;
    }

    /** Where to WRITE one block: an address in the registered region of {@code tier}. */
    public record SlotView(String hash, long address, int length) {}

    public record ReserveResponse(
            String reservationId, Instant expiresAt, String tier, List<SlotView> slots, List<String> alreadyStored) {}

    @GetMapping("/transport")
    public TransportService.View transport(@RequestAttribute(Caller.ATTRIBUTE) Caller caller) {
        guard.requireOneSided(caller);
        return transport.view();
    }

    @PostMapping(path = "/namespaces/{ns}/blocks:reserve", consumes = MediaType.APPLICATION_JSON_VALUE)
    public ReserveResponse reserve(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @Valid @RequestBody ReserveRequest request)
            throws IOException {
        Reservation r = oneSided.reserve(caller, ns, request, TransportService.TIER, transport::requireAvailable)
                .reservation();
        List<SlotView> slots = new ArrayList<>(r.slots().size());
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
            @Valid @RequestBody CommitRequest request) {
        return oneSided.commit(caller, ns, request, TransportService.TIER, transport.backend());
    }

    /** Cancels a reservation made on either path (one-sided or {@code /v1/local}). */
    @DeleteMapping("/reservations/{id}")
    public ResponseEntity<Void> cancel(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @PathVariable("id") String id) {
        oneSided.cancel(caller, id);
        return ResponseEntity.noContent().build();
    }
}
