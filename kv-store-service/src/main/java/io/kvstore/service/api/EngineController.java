package io.kvstore.service.api;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.Lease;
import io.kvstore.engine.SlotLocation;
import io.kvstore.engine.TierEngine;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.service.blocks.BlockService;
import io.kvstore.service.blocks.OneSidedService;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.quota.FairLookups;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TenantGuard;
import io.kvstore.service.transport.TransportService;
import io.kvstore.service.web.ConnectorStreams;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The engine API under {@code /v1}: namespaces, lookup, binary store and fetch, delete, leases. Every call
 * names its namespace and is checked against the caller's token ({@link TenantGuard}) before anything else.
 */
@RestController
@RequestMapping("/v1")
public class EngineController {

    private final BlockService blocks;
    private final NamespaceRegistry namespaces;
    private final TransportService transport;
    private final TierEngine engine;
    private final TenantGuard guard;
    private final OneSidedService oneSided;
    private final FairLookups fair;

    public EngineController(
            BlockService blocks,
            NamespaceRegistry namespaces,
            TransportService transport,
            TierEngine engine,
            TenantGuard guard,
            OneSidedService oneSided,
            FairLookups fair) {
        this.oneSided = oneSided;
        this.fair = fair;
        this.blocks = blocks;
        this.namespaces = namespaces;
        this.transport = transport;
        this.engine = engine;
        this.guard = guard;
    }

    @PutMapping(path = "/namespaces/{ns}", consumes = MediaType.APPLICATION_JSON_VALUE)
    public ResponseEntity<NamespaceView> declare(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @RequestBody NamespaceDeclaration declaration) {
        NamespaceRegistry.checkName(ns);
        guard.requireWrite(caller, ns);
        NamespaceSpec spec = declaration.toSpec();
        var outcome = blocks.declare(ns, spec, caller.tenant());
        return ResponseEntity.status(outcome == NamespaceRegistry.Outcome.CREATED ? HttpStatus.CREATED : HttpStatus.OK)
                .body(NamespaceView.of(ns, spec, namespaces.owner(ns)));
    }

    @GetMapping("/namespaces/{ns}")
    public NamespaceView namespace(@RequestAttribute(Caller.ATTRIBUTE) Caller caller, @PathVariable("ns") String ns) {
        guard.requireRead(caller, ns);
        return NamespaceView.of(ns, namespaces.require(ns), namespaces.owner(ns));
    }

    /** The namespaces the caller may see: those its token grants and its tenant owns. */
    @GetMapping("/namespaces")
    public EngineResponses.Namespaces namespaces(@RequestAttribute(Caller.ATTRIBUTE) Caller caller) {
        Map<String, NamespaceView> out = new LinkedHashMap<>();
        namespaces.all().forEach((name, spec) -> {
            if (guard.visible(caller, name)) {
                out.put(name, NamespaceView.of(name, spec, namespaces.owner(name)));
            }
        });
        return new EngineResponses.Namespaces(out);
    }

    @DeleteMapping("/namespaces/{ns}")
    public EngineResponses.NamespaceDeleted deleteNamespace(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @PathVariable("ns") String ns) {
        guard.requireWrite(caller, ns);
        return new EngineResponses.NamespaceDeleted(ns, blocks.deleteNamespace(ns));
    }

    @PostMapping(path = "/lookup", consumes = MediaType.APPLICATION_JSON_VALUE)
    public LookupResponse lookup(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @RequestBody LookupRequest request) {
        // its body parsed, the lookup does its work in its tenant's turn (FairLookups)
        return fair.run(caller.tenant(), () -> answer(caller, request));
    }

    private LookupResponse answer(Caller caller, LookupRequest request) {
        request.requireKnownFields();
        if (request.namespace() == null) {
            throw new InvalidRequestException("namespace", "namespace is required");
        }
        guard.requireRead(caller, request.namespace());
        NamespaceSpec spec = namespaces.require(request.namespace());
        List<BlockHash> hashes;
        if (request.tokenIds() != null && request.blockHashes() != null) {
            throw new InvalidRequestException("tokenIds", "give either tokenIds or blockHashes, not both");
        } else if (request.tokenIds() != null) {
            hashes = blocks.hashTokens(spec, request.tokenIds(), extraKeys(request.extraKeys()));
        } else if (request.blockHashes() != null) {
            if (request.extraKeys() != null) {
                throw new InvalidRequestException(
                        "extraKeys", "extraKeys go with tokenIds; hashes already include them");
            }
            hashes = blocks.parseHashes(spec, request.blockHashes(), "blockHashes");
        } else {
            throw new InvalidRequestException("tokenIds", "one of tokenIds or blockHashes is required");
        }
        var match = blocks.lookup(request.namespace(), spec, hashes, Boolean.TRUE.equals(request.lease()));
        var result = match.result();
        Lease lease = match.lease();
        List<String> answered = Boolean.TRUE.equals(request.allHashes())
                ? hashes.stream().map(BlockHash::hex).toList()
                : result.blocks().stream().map(k -> k.hash().hex()).toList();
        return new LookupResponse(
                request.namespace(),
                result.matchedBlocks(),
                (long) result.matchedBlocks() * spec.blockSize(),
                answered,
                result.tiers().stream().map(TierId::name).toList(),
                lease == null
                        ? null
                        : new LookupResponse.LeaseView(
                                lease.id(),
                                lease.expiresAt(),
                                lease.blocks().size(),
                                transport.available() && caller.oneSided() ? locations(lease) : null));
    }

    /** Read descriptors of leased blocks; the lease keeps each where it is until released or expired. */
    private List<LookupResponse.Location> locations(Lease lease) {
        List<LookupResponse.Location> out = new ArrayList<>(lease.blocks().size());
        for (SlotLocation slot : engine.locate(lease, TransportService.TIER)) {
            out.add(
                    slot.present()
                            ? new LookupResponse.Location(
                                    slot.key().hash().hex(),
                                    TransportService.TIER.name(),
                                    transport.address(slot.offset()),
                                    slot.length(),
                                    Integer.toUnsignedLong(slot.crc32c()))
                            : new LookupResponse.Location(slot.key().hash().hex(), null, null, null, null));
        }
        return out;
    }

    /** Stores a framed batch (see {@code BlockFrames}) streamed from the request body. */
    @PutMapping(path = "/namespaces/{ns}/blocks", consumes = MediaType.APPLICATION_OCTET_STREAM_VALUE)
    public EngineResponses.Stored store(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            HttpServletRequest request)
            throws IOException {
        guard.requireWrite(caller, ns);
        var stored = blocks.store(ns, request.getInputStream(), request.getContentLengthLong());
        Map<String, Integer> tiers = new LinkedHashMap<>();
        stored.tiers().forEach((tier, n) -> tiers.put(tier.name(), n));
        return new EngineResponses.Stored(ns, stored.blocks(), stored.bytes(), tiers);
    }

    /**
     * Sends the named blocks as a framed batch, in the order asked, chunked: each block is verified just
     * before it goes out, and one that fails (or was lost) after the answer began is sent as a missing
     * frame, so the answer is always complete and parseable (see {@code BlockFrames}).
     */
    @PostMapping(path = "/namespaces/{ns}/blocks:fetch", consumes = MediaType.APPLICATION_JSON_VALUE)
    public void fetch(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @RequestBody FetchRequest request,
            HttpServletResponse response)
            throws IOException {
        guard.requireRead(caller, ns);
        try (var fetch = blocks.fetch(ns, request.blockHashes())) {
            response.setStatus(HttpServletResponse.SC_OK);
            response.setContentType(MediaType.APPLICATION_OCTET_STREAM_VALUE);
            fetch.writeTo(ConnectorStreams.forBlocks(response));
        }
    }

    @DeleteMapping("/namespaces/{ns}/blocks/{hash}")
    public ResponseEntity<Void> deleteBlock(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @PathVariable("hash") String hash) {
        guard.requireWrite(caller, ns);
        blocks.delete(ns, hash);
        return ResponseEntity.noContent().build();
    }

    @GetMapping("/leases/{id}")
    public EngineResponses.LeaseView lease(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @PathVariable("id") String id) {
        Lease lease = blocks.lease(id);
        guard.requireLeaseAccess(caller, lease);
        return new EngineResponses.LeaseView(
                lease.id(),
                lease.expiresAt(),
                lease.blocks().stream().map(BlockKey::hash).map(BlockHash::hex).toList());
    }

    @DeleteMapping("/leases/{id}")
    public ResponseEntity<Void> release(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @PathVariable("id") String id) {
        oneSided.release(caller, id);
        return ResponseEntity.noContent().build();
    }

    static ExtraKeys extraKeys(LookupRequest.ExtraKeysJson json) {
        return ExtraKeysParser.parse(json);
    }
}
