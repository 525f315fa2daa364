package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import io.kvstore.service.admin.AdminController;
import io.kvstore.service.api.EngineResponses;
import io.kvstore.service.api.LookupResponse;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.security.Caller;
import java.io.IOException;
import java.util.List;

/**
 * One member as the node answering a request sees it: itself (called in process) or another node (called
 * over its engine API with the {@value #FORWARDED} header, so it answers from its own tiers). Every call
 * names the caller the first node authenticated: another node enforces that caller's tenant rules again
 * (it receives it signed with the cluster secret, {@code PeerCredentials}); this node checked it already.
 */
public sealed interface Peer permits LocalPeer, RemotePeer {

    /** Marks a node-to-node call; its value is the calling node's name. Such calls are never routed again. */
    String FORWARDED = io.kvstore.service.security.PeerCredentials.FORWARDED;

    /** On a forwarded pin: the etcd revision that wrote the pins, so a lagging watch does not undo them. */
    String PINS_REVISION = "Kvstore-Pins-Revision";

    Member member();

    /**
     * Which of {@code hashes} this node holds, each with its fastest tier (null when not held), the held
     * ones leased when asked.
     */
    Probe probe(Caller caller, String namespace, List<BlockHash> hashes, boolean lease) throws IOException;

    /** Stores a framed batch ({@code BlockFrames}) on this node. */
    EngineResponses.Stored store(Caller caller, String namespace, byte[] frames) throws IOException;

    /** The named blocks as a framed batch, in the order asked; fails when one is not held. */
    byte[] fetch(Caller caller, String namespace, List<BlockHash> hashes) throws IOException;

    /** Deletes a block on this node: true when deleted, false when not held; 409 when pinned or leased. */
    boolean delete(Caller caller, String namespace, BlockHash hash) throws IOException;

    /** Deletes a namespace and its blocks on this node: how many blocks; -1 when it is not declared there. */
    int deleteNamespace(Caller caller, String namespace) throws IOException;

    /** Declares a namespace on this node. */
    void declare(Caller caller, String namespace, NamespaceDeclaration declaration) throws IOException;

    /** Releases a lease this node granted; false when it was unknown. */
    boolean release(Caller caller, String leaseId) throws IOException;

    /**
     * Pins ({@code pin} true) or unpins the named blocks this node holds; how many it pinned or unpinned.
     * {@code revision}: the etcd revision that wrote the pins (0 for an unpin or when unknown).
     */
    int pin(Caller caller, AdminController.PinRequest request, boolean pin, long revision) throws IOException;

    /** This node's tiers as {@code GET /admin/tiers} shows them. */
    AdminController.Tiers tiers(Caller caller) throws IOException;

    /**
     * A probe's answer: per block asked, its fastest tier or null, and the lease on the held blocks when one
     * was asked for ({@link ProbeWire} is its form between nodes).
     */
    record Probe(List<String> tiers, LookupResponse.LeaseView lease) {}
}
