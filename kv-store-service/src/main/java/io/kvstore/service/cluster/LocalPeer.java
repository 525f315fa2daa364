package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.catalog.LookupResult;
import io.kvstore.engine.BlockHeldException;
import io.kvstore.engine.Lease;
import io.kvstore.engine.SlotLocation;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.admin.AdminController;
import io.kvstore.service.api.EngineResponses;
import io.kvstore.service.api.LookupResponse;
import io.kvstore.service.blocks.BlockService;
import io.kvstore.service.error.ConflictException;
import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.security.Caller;
import io.kvstore.service.transport.TransportService;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * This node as a peer of itself: the same calls as {@link RemotePeer}, made in process (the caller was
 * checked where the request came in).
 */
public final class LocalPeer implements Peer {

    private final Member member;
    private final TierEngine engine;
    private final BlockService blocks;
    private final NamespaceRegistry namespaces;
    private final TransportService transport;
    private final AdminController admin;

    public LocalPeer(
            Member member,
            TierEngine engine,
            BlockService blocks,
            NamespaceRegistry namespaces,
            TransportService transport,
            AdminController admin) {
        this.member = member;
        this.admin = admin;
        this.engine = engine;
        this.blocks = blocks;
        this.namespaces = namespaces;
        this.transport = transport;
    }

    @Override
    public Member member() {
        return member;
    }

    @Override
    public Probe probe(Caller caller, String namespace, List<BlockHash> hashes, boolean lease) {
        namespaces.require(namespace);
        int n = hashes.size();
        List<String> tiers = new ArrayList<>(n);
        List<BlockKey> held = new ArrayList<>();
        // one engine lookup per held stretch: each stops at the next block this node lacks
        int i = 0;
        while (i < n) {
            LookupResult r = engine.lookup(namespace, hashes.subList(i, n));
            for (TierId t : r.tiers()) {
                tiers.add(t.name());
            }
            held.addAll(r.blocks());
            i += r.matchedBlocks();
            if (i < n) {
                tiers.add(null);
                i++;
            }
        }
        LookupResponse.LeaseView view = null;
        if (lease && !held.isEmpty()) {
            Lease granted = blocks.lease(namespace, held, null);
            if (granted.blocks().size() < held.size()) {
                // evicted between lookup and lease: what the lease does not hold is not offered
                Set<BlockKey> leased = new HashSet<>(granted.blocks());
                for (int k = 0; k < n; k++) {
                    if (tiers.get(k) != null && !leased.contains(new BlockKey(namespace, hashes.get(k)))) {
                        tiers.set(k, null);
                    }
                }
            }
            view = new LookupResponse.LeaseView(
                    granted.id(),
                    granted.expiresAt(),
                    granted.blocks().size(),
                    // READ descriptors only for a token that may use the one-sided data plane, as on one node
                    transport.available() && caller.oneSided() ? locations(granted) : null);
        }
        return new Probe(tiers, view);
    }

    /** Read descriptors of leased blocks in this node's registered DRAM region (as {@code /v1/lookup}). */
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

    @Override
    public EngineResponses.Stored store(Caller caller, String namespace, byte[] frames) throws IOException {
        var stored = blocks.store(namespace, new ByteArrayInputStream(frames), frames.length);
        Map<String, Integer> tiers = new LinkedHashMap<>();
        stored.tiers().forEach((tier, count) -> tiers.put(tier.name(), count));
        return new EngineResponses.Stored(namespace, stored.blocks(), stored.bytes(), tiers);
    }

    @Override
    public byte[] fetch(Caller caller, String namespace, List<BlockHash> hashes) throws IOException {
        try (var fetch =
                blocks.fetch(namespace, hashes.stream().map(BlockHash::hex).toList())) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            fetch.writeTo(out);
            return out.toByteArray();
        }
    }

    @Override
    public boolean delete(Caller caller, String namespace, BlockHash hash) throws PeerException {
        try {
            blocks.delete(namespace, hash.hex());
            return true;
        } catch (NotFoundException e) {
            return false;
        } catch (BlockHeldException e) {
            throw new PeerException(409, "node " + member.name() + ": " + e.getMessage(), null);
        }
    }

    @Override
    public int deleteNamespace(Caller caller, String namespace) throws PeerException {
        try {
            return blocks.deleteNamespace(namespace);
        } catch (NotFoundException e) {
            return -1;
        } catch (ConflictException e) {
            throw new PeerException(409, "node " + member.name() + ": " + e.getMessage(), null);
        }
    }

    @Override
    public void declare(Caller caller, String namespace, NamespaceDeclaration declaration) {
        blocks.declare(namespace, declaration.toSpec(), declaration.tenant());
    }

    @Override
    public boolean release(Caller caller, String leaseId) {
        return engine.release(leaseId);
    }

    @Override
    public int pin(Caller caller, AdminController.PinRequest request, boolean pin, long revision) {
        return pin ? admin.pin(request).pinnedBlocks() : admin.unpin(request).unpinnedBlocks();
    }

    @Override
    public AdminController.Tiers tiers(Caller caller) {
        return admin.tiers();
    }
}
