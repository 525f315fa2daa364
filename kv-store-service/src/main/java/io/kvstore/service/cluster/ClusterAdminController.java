package io.kvstore.service.cluster;

import io.kvstore.block.BlockKey;
import io.kvstore.service.admin.AdminController;
import io.kvstore.service.security.Caller;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Cluster-wide admin calls (admin role, like all of {@code /admin}): an eviction policy set on
 * any node is applied there, written to etcd and applied by every other node; {@code GET /admin/cluster}
 * shows the members, their tiers and the placement epoch.
 */
@RestController
@RequestMapping("/admin")
@ConditionalOnBooleanProperty("kvstore.cluster.enabled")
public class ClusterAdminController {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ClusterAdminController.class);

    private final AdminController admin;
    private final ClusterSettings settings;
    private final Membership membership;
    private final Peers peers;
    private final ClusterPins pins;

    public ClusterAdminController(
            AdminController admin, ClusterSettings settings, Membership membership, Peers peers, ClusterPins pins) {
        this.admin = admin;
        this.pins = pins;
        this.settings = settings;
        this.membership = membership;
        this.peers = peers;
    }

    /** Validated and applied here first (a bad request changes nothing anywhere), then published. */
    @PutMapping(path = "/eviction-policy", consumes = MediaType.APPLICATION_JSON_VALUE, headers = "!" + Peer.FORWARDED)
    public Map<String, AdminController.PolicyView> setEvictionPolicy(
            @RequestBody Map<String, AdminController.PolicyView> request) throws Exception {
        Map<String, AdminController.PolicyView> result = admin.setEvictionPolicy(request);
        Map<String, AdminController.PolicyView> changed = new java.util.LinkedHashMap<>();
        for (String tier : request.keySet()) {
            String name = tier.trim().toUpperCase(java.util.Locale.ROOT);
            changed.put(name, result.get(name));
        }
        try {
            settings.publishPolicy(changed);
        } catch (Exception e) {
            throw PeerException.etcdUnwritable(e, "the policy is applied on this node only; set it again");
        }
        return result;
    }

    /**
     * Pins the named blocks across the cluster: the pins are written to etcd, so every node pins them while
     * it holds them, including nodes that join later and blocks that arrive later (see {@link ClusterPins});
     * then every live node is told at once, and the answer counts the named blocks pinned on each node.
     * Validated here first; 503 when etcd cannot be written (nothing is pinned then).
     */
    @PostMapping(path = "/pin", consumes = MediaType.APPLICATION_JSON_VALUE, headers = "!" + Peer.FORWARDED)
    public AdminController.Pinned pin(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @RequestBody AdminController.PinRequest request)
            throws PeerException {
        List<BlockKey> keys = admin.keys(request);
        long revision = publish(keys, true);
        return new AdminController.Pinned(pins.add(keys, revision) + onEveryOtherNode(caller, request, true, revision));
    }

    /**
     * Unpins the named blocks across the cluster: on every live node at once (the count), then in etcd; a
     * node whose settings mirror still shows the pin in between pins the block again until etcd's delete
     * reaches it. 503 when etcd cannot be written: the nodes then pin the blocks again from etcd.
     */
    @PostMapping(path = "/unpin", consumes = MediaType.APPLICATION_JSON_VALUE, headers = "!" + Peer.FORWARDED)
    public AdminController.Unpinned unpin(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @RequestBody AdminController.PinRequest request)
            throws PeerException {
        List<BlockKey> keys = admin.keys(request);
        // nodes first, then etcd: told by their watch first, nodes would have nothing left to count
        int unpinned = pins.remove(keys) + onEveryOtherNode(caller, request, false, 0);
        publish(keys, false);
        return new AdminController.Unpinned(unpinned);
    }

    /**
     * Another node's pin, already in etcd at the revision its header names: applied to this node's share at
     * once, and kept until this node's watch reaches that revision (it may lag).
     */
    @PostMapping(path = "/pin", consumes = MediaType.APPLICATION_JSON_VALUE, headers = Peer.FORWARDED)
    public AdminController.Pinned pinHere(
            @RequestBody AdminController.PinRequest request,
            @RequestHeader(name = Peer.PINS_REVISION, required = false) @Nullable Long revision) {
        return new AdminController.Pinned(pins.add(admin.keys(request), revision == null ? 0 : revision));
    }

    /** Another node's unpin, before it is removed from etcd: applied here at once. */
    @PostMapping(path = "/unpin", consumes = MediaType.APPLICATION_JSON_VALUE, headers = Peer.FORWARDED)
    public AdminController.Unpinned unpinHere(@RequestBody AdminController.PinRequest request) {
        return new AdminController.Unpinned(pins.remove(admin.keys(request)));
    }

    /** Writes the pins to etcd (or deletes them); the revision of the write. */
    private long publish(List<BlockKey> keys, boolean pin) throws PeerException {
        try {
            return settings.publishPins(keys, pin);
        } catch (Exception e) {
            throw PeerException.etcdUnwritable(e, "cluster pins are kept in etcd; try again");
        }
    }

    private int onEveryOtherNode(Caller caller, AdminController.PinRequest request, boolean pin, long revision) {
        int total = 0;
        for (Member m : membership.current().members()) {
            if (!m.isSameNode(peers.self())) {
                try {
                    total += peers.of(m).pin(caller, request, pin, revision);
                } catch (java.io.IOException e) {
                    // it applies the pin from etcd when its watch or its next renewal sees it
                    log.warn("cluster: {} not applied on {} now: {}", pin ? "pin" : "unpin", m.name(), e.getMessage());
                }
            }
        }
        return total;
    }

    /** etcd or a node that could not be reached: problem JSON with its status. */
    @ExceptionHandler(PeerException.class)
    public ResponseEntity<ProblemDetail> peerFailed(PeerException e) {
        return ClusterEngineController.problem(e);
    }

    /** One member: its name, address, whether it is the node answering, and its tiers (or why not). */
    public record MemberView(
            String name, String address, boolean self, List<AdminController.TierView> tiers, String error) {}

    /**
     * {@code GET /admin/cluster}; {@code pinnedBlocks}: blocks this node holds pinned for the cluster's pins.
     */
    public record ClusterView(
            String node,
            long epoch,
            boolean etcdReachable,
            List<MemberView> members,
            Map<String, AdminController.PolicyView> evictionPolicy,
            int pinnedBlocks) {}

    @GetMapping("/cluster")
    public ClusterView cluster(@RequestAttribute(Caller.ATTRIBUTE) Caller caller) {
        MemberSet set = membership.current();
        List<MemberView> members = new ArrayList<>();
        for (Member m : set.members()) {
            boolean self = m.isSameNode(peers.self());
            try {
                members.add(new MemberView(
                        m.name(), m.address(), self, peers.of(m).tiers(caller).tiers(), null));
            } catch (Exception e) {
                members.add(new MemberView(m.name(), m.address(), self, null, e.getMessage()));
            }
        }
        return new ClusterView(
                peers.self().name(),
                set.epoch(),
                membership.etcdReachable(),
                members,
                settings.policies(),
                pins.pinnedHere());
    }
}
