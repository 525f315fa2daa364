package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.service.api.EngineResponses;
import io.kvstore.service.api.ExtraKeysParser;
import io.kvstore.service.api.FetchRequest;
import io.kvstore.service.api.LookupRequest;
import io.kvstore.service.api.NamespaceView;
import io.kvstore.service.blocks.BlockService;
import io.kvstore.service.blocks.ReserveRequest;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.ConflictException;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.local.LocalPathService;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.quota.FairLookups;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TenantGuard;
import io.kvstore.service.transport.OneSidedController;
import io.kvstore.service.web.ConnectorStreams;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.validation.Valid;
import java.io.IOException;
import java.net.URI;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.json.JsonMapper;

/**
 * The engine API's block calls for the whole cluster. Its mappings match only requests without the
 * {@value Peer#FORWARDED} header (engines' calls), and being the more specific match they take those from
 * {@code EngineController}; node-to-node calls carry the header and reach {@code EngineController}, which
 * answers from this node's tiers. The one call only nodes make, the probe, is {@link ProbeServlet}.
 */
@RestController
@RequestMapping("/v1")
@ConditionalOnBooleanProperty("kvstore.cluster.enabled")
public class ClusterEngineController {

    private static final Logger log = LoggerFactory.getLogger(ClusterEngineController.class);
    private static final String ENGINE_CALL = "!" + Peer.FORWARDED;

    private final TenantGuard guard;
    private final FairLookups fair;

    private final ClusterRouter router;
    private final ClusterSettings settings;
    private final Peers peers;
    private final Membership membership;
    private final BlockService blocks;
    private final NamespaceRegistry namespaces;
    private final OneSidedController oneSided;
    private final LocalPathService local;
    private final JsonMapper json;
    private final int maxBlocks;

    public ClusterEngineController(
            JsonMapper json,
            KvStoreProperties properties,
            OneSidedController oneSided,
            LocalPathService local,
            ClusterRouter router,
            ClusterSettings settings,
            Peers peers,
            Membership membership,
            BlockService blocks,
            NamespaceRegistry namespaces,
            TenantGuard guard,
            FairLookups fair) {
        this.guard = guard;
        this.fair = fair;
        this.oneSided = oneSided;
        this.json = json;
        this.maxBlocks = properties.limits().maxBlocksPerRequest();
        this.local = local;
        this.router = router;
        this.settings = settings;
        this.peers = peers;
        this.membership = membership;
        this.blocks = blocks;
        this.namespaces = namespaces;
    }

    /** Declares the namespace here, in the cluster settings (for nodes joining later) and on every live node. */
    @PutMapping(path = "/namespaces/{ns}", consumes = MediaType.APPLICATION_JSON_VALUE, headers = ENGINE_CALL)
    public ResponseEntity<NamespaceView> declare(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @RequestBody NamespaceDeclaration declaration)
            throws Exception {
        NamespaceRegistry.checkName(ns);
        guard.requireWrite(caller, ns);
        NamespaceSpec spec = declaration.toSpec();
        var outcome = blocks.declare(ns, spec, caller.tenant());
        // other nodes learn the owner with the declaration
        declaration = NamespaceDeclaration.of(spec, caller.tenant());
        NamespaceDeclaration other;
        try {
            other = settings.publishNamespace(ns, declaration);
        } catch (Exception e) {
            throw PeerException.etcdUnwritable(e, "the namespace is declared on this node only; declare it again");
        }
        if (other != null) {
            // declared at the same moment through another node, by another tenant or with another layout: the
            // cluster keeps that one (this node applies it from its watch)
            if (outcome == NamespaceRegistry.Outcome.CREATED) {
                blocks.deleteNamespace(ns);
            }
            throw new ConflictException("namespace '" + ns + "' is declared in the cluster "
                    + (Objects.equals(other.tenant(), caller.tenant()) ? "with another layout" : "by another tenant"));
        }
        for (Member m : membership.current().members()) {
            if (!m.isSameNode(peers.self())) {
                try {
                    peers.of(m).declare(caller, ns, declaration);
                } catch (PeerException e) {
                    // it applies the declaration from the cluster settings when its watch or resync sees it
                    log.warn("cluster: namespace '{}' not declared on {} now: {}", ns, m.name(), e.getMessage());
                }
            }
        }
        return ResponseEntity.status(outcome == NamespaceRegistry.Outcome.CREATED ? HttpStatus.CREATED : HttpStatus.OK)
                .body(NamespaceView.of(ns, spec, namespaces.owner(ns)));
    }

    /**
     * Deletes the namespace on every live node, then its declaration from the cluster settings, so a node
     * that joins later (or missed the call) does not declare it again; nodes that missed the call delete
     * it when their settings mirror sees the declaration withdrawn.
     */
    @DeleteMapping(path = "/namespaces/{ns}", headers = ENGINE_CALL)
    public EngineResponses.NamespaceDeleted deleteNamespace(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @PathVariable("ns") String ns) throws Exception {
        guard.requireWrite(caller, ns);
        namespaces.require(ns);
        int deleted = router.deleteNamespace(caller, ns);
        try {
            settings.withdrawNamespace(ns);
        } catch (Exception e) {
            throw PeerException.etcdUnwritable(
                    e, "the namespace is deleted on the live nodes but still declared in etcd; delete it again");
        }
        return new EngineResponses.NamespaceDeleted(ns, deleted);
    }

    /** Deletes the block on every live node holding it (see {@link ClusterRouter#delete}). */
    @DeleteMapping(path = "/namespaces/{ns}/blocks/{hash}", headers = ENGINE_CALL)
    public ResponseEntity<Void> deleteBlock(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @PathVariable("hash") String hash)
            throws IOException {
        guard.requireWrite(caller, ns);
        NamespaceSpec spec = namespaces.require(ns);
        router.delete(
                caller, ns, blocks.parseHashes(spec, List.of(hash), "hash").getFirst());
        return ResponseEntity.noContent().build();
    }

    /**
     * A one-sided reserve writes into the DRAM region of the node asked, so it is accepted only where the
     * blocks are placed (the node their run's owner is, one copy): elsewhere 421 names the owning node(s),
     * where the engine reserves instead; the commit then goes to the node that granted the reservation.
     */
    @PostMapping(
            path = "/namespaces/{ns}/blocks:reserve",
            consumes = MediaType.APPLICATION_JSON_VALUE,
            headers = ENGINE_CALL)
    public OneSidedController.ReserveResponse reserve(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @Valid @RequestBody ReserveRequest request)
            throws IOException {
        requirePlacedHere(caller, ns, request);
        return oneSided.reserve(caller, ns, request);
    }

    /** The same-host path's reserve (into this node's DRAM file): as {@link #reserve}. */
    @PostMapping(
            path = "/local/namespaces/{ns}/blocks:reserve",
            consumes = MediaType.APPLICATION_JSON_VALUE,
            headers = ENGINE_CALL)
    public LocalPathService.ReserveResponse reserveLocal(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @Valid @RequestBody ReserveRequest request)
            throws IOException {
        requirePlacedHere(caller, ns, request);
        return local.reserve(caller, ns, request);
    }

    /** 421 unless every block of a reserve is placed on this node. */
    private void requirePlacedHere(Caller caller, String ns, ReserveRequest request) {
        List<String> hashes =
                request.blocks().stream().map(ReserveRequest.Block::hash).toList();
        List<String> parents =
                request.blocks().stream().map(ReserveRequest.Block::parent).toList();
        guard.requireWrite(caller, ns);
        guard.requireOneSided(caller);
        NamespaceSpec spec = namespaces.require(ns);
        List<BlockHash> hs = blocks.parseHashes(spec, hashes, "blocks[].hash");
        List<BlockHash> ps = new java.util.ArrayList<>(parents.size());
        for (String p : parents) {
            ps.add(
                    p == null
                            ? null
                            : blocks.parseHashes(spec, List.of(p), "blocks[].parent")
                                    .getFirst());
        }
        var targets = router.writeTargets(caller, ns, hs, ps);
        if (targets.size() != 1 || !targets.keySet().iterator().next().isSameNode(peers.self())) {
            throw new NotPlacedHereException(ns, peers.self(), targets, hs, router.replicas(ns));
        }
    }

    @PostMapping(path = "/lookup", consumes = MediaType.APPLICATION_JSON_VALUE, headers = ENGINE_CALL)
    public ClusterLookupResponse lookup(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @RequestBody LookupRequest request) {
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
            // hashing is the lookup's CPU work; the peers' answers are waited for outside the tenant's turn
            hashes = fair.run(
                    caller.tenant(), () -> blocks.hashTokens(spec, request.tokenIds(), extraKeys(request.extraKeys())));
        } else if (request.blockHashes() != null) {
            if (request.extraKeys() != null) {
                throw new InvalidRequestException(
                        "extraKeys", "extraKeys go with tokenIds; hashes already include them");
            }
            hashes = blocks.parseHashes(spec, request.blockHashes(), "blockHashes");
        } else {
            throw new InvalidRequestException("tokenIds", "one of tokenIds or blockHashes is required");
        }
        return router.lookup(
                caller,
                request.namespace(),
                spec,
                hashes,
                Boolean.TRUE.equals(request.lease()),
                Boolean.TRUE.equals(request.allHashes()));
    }

    @PutMapping(
            path = "/namespaces/{ns}/blocks",
            consumes = MediaType.APPLICATION_OCTET_STREAM_VALUE,
            headers = ENGINE_CALL)
    public EngineResponses.Stored store(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            HttpServletRequest request)
            throws IOException {
        guard.requireWrite(caller, ns);
        NamespaceSpec spec = namespaces.require(ns);
        return router.store(caller, ns, spec, request.getInputStream(), request.getContentLengthLong());
    }

    @PostMapping(
            path = "/namespaces/{ns}/blocks:fetch",
            consumes = MediaType.APPLICATION_JSON_VALUE,
            headers = ENGINE_CALL)
    public void fetch(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @RequestBody FetchRequest request,
            HttpServletResponse response)
            throws IOException {
        guard.requireRead(caller, ns);
        NamespaceSpec spec = namespaces.require(ns);
        var gathered = router.fetch(caller, ns, spec, blocks.parseHashes(spec, request.blockHashes(), "blockHashes"));
        response.setStatus(HttpServletResponse.SC_OK);
        response.setContentType(MediaType.APPLICATION_OCTET_STREAM_VALUE);
        response.setContentLengthLong(gathered.contentLength());
        gathered.writeTo(ConnectorStreams.forBlocks(response));
    }

    /** A peer that refused or could not be reached: its status (502/503 for its own failures) as problem JSON. */
    @ExceptionHandler(PeerException.class)
    public ResponseEntity<ProblemDetail> peerFailed(PeerException e) {
        return problem(e);
    }

    static ResponseEntity<ProblemDetail> problem(PeerException e) {
        HttpStatus status = HttpStatus.resolve(e.status());
        if (status == null) {
            status = HttpStatus.BAD_GATEWAY;
        }
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, e.getMessage());
        problem.setTitle(e.unreachable() ? "Cluster node unreachable" : status.getReasonPhrase());
        problem.setType(URI.create("about:blank"));
        return ResponseEntity.status(status)
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(problem);
    }

    /** A one-sided write asked of a node the blocks are not placed on: 421 naming where they go. */
    @ExceptionHandler(NotPlacedHereException.class)
    public ResponseEntity<ProblemDetail> notPlacedHere(NotPlacedHereException e) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.MISDIRECTED_REQUEST, e.getMessage());
        problem.setTitle("Not the owning node");
        problem.setType(URI.create("about:blank"));
        problem.setProperty("owners", e.owners());
        return ResponseEntity.status(HttpStatus.MISDIRECTED_REQUEST)
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(problem);
    }

    static ExtraKeys extraKeys(LookupRequest.ExtraKeysJson json) {
        return ExtraKeysParser.parse(json);
    }
}
