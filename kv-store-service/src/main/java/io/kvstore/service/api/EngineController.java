package io.kvstore.service.api;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.Lease;
import io.kvstore.engine.SlotLocation;
import io.kvstore.engine.TierEngine;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.service.blocks.BlockService;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
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
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** The engine API under {@code /v1}: namespaces, lookup, binary store and fetch, delete, leases. */
@RestController
@RequestMapping("/v1")
public class EngineController {

    private final BlockService blocks;
    private final NamespaceRegistry namespaces;
    private final TransportService transport;
    private final TierEngine engine;

    public EngineController(
            BlockService blocks, NamespaceRegistry namespaces, TransportService transport, TierEngine engine) {
        this.blocks = blocks;
        this.namespaces = namespaces;
        this.transport = transport;
        this.engine = engine;
    }

    @PutMapping(path = "/namespaces/{ns}", consumes = MediaType.APPLICATION_JSON_VALUE)
    public ResponseEntity<Map<String, Object>> declare(
            @PathVariable("ns") String ns, @RequestBody NamespaceDeclaration declaration) {
        NamespaceSpec spec = declaration.toSpec();
        var outcome = namespaces.declare(ns, spec);
        return ResponseEntity.status(outcome == NamespaceRegistry.Outcome.CREATED ? HttpStatus.CREATED : HttpStatus.OK)
                .body(namespaceView(ns, spec));
    }

    @GetMapping("/namespaces/{ns}")
    public Map<String, Object> namespace(@PathVariable("ns") String ns) {
        return namespaceView(ns, namespaces.require(ns));
    }

    @GetMapping("/namespaces")
    public Map<String, Object> namespaces() {
        Map<String, Object> out = new LinkedHashMap<>();
        namespaces.all().forEach((name, spec) -> out.put(name, namespaceView(name, spec)));
        return Map.of("namespaces", out);
    }

    @DeleteMapping("/namespaces/{ns}")
    public Map<String, Object> deleteNamespace(@PathVariable("ns") String ns) {
        return Map.of("namespace", ns, "deletedBlocks", blocks.deleteNamespace(ns));
    }

    @PostMapping(path = "/lookup", consumes = MediaType.APPLICATION_JSON_VALUE)
    public LookupResponse lookup(@RequestBody LookupRequest request) {
        if (request.namespace() == null) {
            throw new InvalidRequestException("namespace", "namespace is required");
        }
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
        return new LookupResponse(
                request.namespace(),
                result.matchedBlocks(),
                (long) result.matchedBlocks() * spec.blockSize(),
                result.blocks().stream().map(k -> k.hash().hex()).toList(),
                result.tiers().stream().map(TierId::name).toList(),
                lease == null
                        ? null
                        : new LookupResponse.LeaseView(
                                lease.id(),
                                lease.expiresAt(),
                                lease.blocks().size(),
                                transport.available() ? locations(lease) : null));
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
    public Map<String, Object> store(@PathVariable("ns") String ns, HttpServletRequest request) throws IOException {
        var stored = blocks.store(ns, request.getInputStream(), request.getContentLengthLong());
        Map<String, Integer> tiers = new LinkedHashMap<>();
        stored.tiers().forEach((tier, n) -> tiers.put(tier.name(), n));
        return Map.of("namespace", ns, "storedBlocks", stored.blocks(), "bytes", stored.bytes(), "tiers", tiers);
    }

    /** Sends the named blocks as a framed batch, in the order asked. */
    @PostMapping(path = "/namespaces/{ns}/blocks:fetch", consumes = MediaType.APPLICATION_JSON_VALUE)
    public void fetch(@PathVariable("ns") String ns, @RequestBody FetchRequest request, HttpServletResponse response)
            throws IOException {
        try (var fetch = blocks.fetch(ns, request.blockHashes())) {
            response.setStatus(HttpServletResponse.SC_OK);
            response.setContentType(MediaType.APPLICATION_OCTET_STREAM_VALUE);
            response.setContentLengthLong(fetch.contentLength());
            fetch.writeTo(ConnectorStreams.outputStream(response));
        }
    }

    @DeleteMapping("/namespaces/{ns}/blocks/{hash}")
    public ResponseEntity<Void> deleteBlock(@PathVariable("ns") String ns, @PathVariable("hash") String hash) {
        blocks.delete(ns, hash);
        return ResponseEntity.noContent().build();
    }

    @GetMapping("/leases/{id}")
    public Map<String, Object> lease(@PathVariable("id") String id) {
        Lease lease = blocks.lease(id);
        return Map.of(
                "id",
                lease.id(),
                "expiresAt",
                lease.expiresAt(),
                "blocks",
                lease.blocks().stream().map(BlockKey::hash).map(BlockHash::hex).toList());
    }

    @DeleteMapping("/leases/{id}")
    public ResponseEntity<Void> release(@PathVariable("id") String id) {
        blocks.release(id);
        return ResponseEntity.noContent().build();
    }

    static ExtraKeys extraKeys(LookupRequest.ExtraKeysJson json) {
        if (json == null) {
            return ExtraKeys.NONE;
        }
        try {
            return new ExtraKeys(json.lora(), json.cacheSalt(), json.more());
        } catch (IllegalArgumentException e) {
            throw new InvalidRequestException("extraKeys.more", "extraKeys.more: " + e.getMessage());
        }
    }

    static Map<String, Object> namespaceView(String name, NamespaceSpec spec) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("namespace", name);
        var d = NamespaceDeclaration.of(spec);
        view.put("model", d.model());
        view.put("layout", d.layout());
        view.put("hashScheme", d.hashScheme());
        view.put("blockBytes", spec.blockBytes());
        view.put("hashBytes", spec.hashBytes());
        return view;
    }
}
