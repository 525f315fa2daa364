package io.kvstore.service.cluster;

import io.kvstore.service.admin.AdminController;
import io.kvstore.service.security.Caller;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
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

    public ClusterAdminController(AdminController admin, ClusterSettings settings, Membership membership, Peers peers) {
        this.admin = admin;
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
        settings.publishPolicy(changed);
        return result;
    }

    /**
     * Pins the named blocks on every live node that holds them, now: a pin is a hold on blocks resident at
     * the call (as on a single node), so it is sent to each node once rather than replayed from etcd, which
     * would pin a block twice. Validated here first; a node that cannot be reached is skipped (logged).
     */
    @PostMapping(path = "/pin", consumes = MediaType.APPLICATION_JSON_VALUE, headers = "!" + Peer.FORWARDED)
    public AdminController.Pinned pin(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @RequestBody AdminController.PinRequest request) {
        return new AdminController.Pinned(onEveryNode(caller, request, true));
    }

    /** Unpins the named blocks on every live node, as {@link #pin}. */
    @PostMapping(path = "/unpin", consumes = MediaType.APPLICATION_JSON_VALUE, headers = "!" + Peer.FORWARDED)
    public AdminController.Unpinned unpin(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller, @RequestBody AdminController.PinRequest request) {
        return new AdminController.Unpinned(onEveryNode(caller, request, false));
    }

    private int onEveryNode(Caller caller, AdminController.PinRequest request, boolean pin) {
        LocalPeer local = (LocalPeer) peers.of(peers.self());
        int total = local.pin(caller, request, pin);
        for (Member m : membership.current().members()) {
            if (!m.equals(peers.self())) {
                try {
                    total += peers.of(m).pin(caller, request, pin);
                } catch (java.io.IOException e) {
                    log.warn("cluster: {} not applied on {}: {}", pin ? "pin" : "unpin", m.name(), e.getMessage());
                }
            }
        }
        return total;
    }

    /** One member: its name, address, whether it is the node answering, and its tiers (or why not). */
    public record MemberView(
            String name, String address, boolean self, List<AdminController.TierView> tiers, String error) {}

    /** {@code GET /admin/cluster}. */
    public record ClusterView(
            String node,
            long epoch,
            boolean etcdReachable,
            List<MemberView> members,
            Map<String, AdminController.PolicyView> evictionPolicy) {}

    @GetMapping("/cluster")
    public ClusterView cluster(@RequestAttribute(Caller.ATTRIBUTE) Caller caller) {
        MemberSet set = membership.current();
        List<MemberView> members = new ArrayList<>();
        for (Member m : set.members()) {
            boolean self = m.equals(peers.self());
            try {
                members.add(new MemberView(
                        m.name(), m.address(), self, peers.of(m).tiers(caller).tiers(), null));
            } catch (Exception e) {
                members.add(new MemberView(m.name(), m.address(), self, null, e.getMessage()));
            }
        }
        return new ClusterView(
                peers.self().name(), set.epoch(), membership.etcdReachable(), members, settings.policies());
    }
}
