package io.kvstore.service.cluster;

import org.jspecify.annotations.Nullable;

/**
 * A live node as its etcd keys announce it: its unique name, the base URL of its HTTP API, when this run of the
 * node joined (so every node knows which members are new and whose runs they just took), and this run's id, which
 * every call signed for it must name ({@link io.kvstore.service.security.PeerCredentials#BOOT}), so a peer signs its
 * first call to this run for it rather than learning it from a refusal. The id is published under a key of its own
 * beside the member key ({@link Membership}); a node of an older release publishes none.
 *
 * @param name the node's {@code kvstore.cluster.node-name}
 * @param address the node's {@code kvstore.cluster.advertised-address}, e.g. {@code http://10.0.0.5:8080}
 * @param joinedAt when the node (this process) joined, in epoch milliseconds
 * @param boot this run of the node ({@link io.kvstore.service.security.PeerCredentials#boot}); null when it signs
 *     no calls ({@code kvstore.cluster.secret} unset), is of an older release, or its run is not seen yet
 */
public record Member(
        String name,
        String address,
        long joinedAt,
        @Nullable String boot) implements Comparable<Member> {

    /** A member whose run is not known (an older release, or a node without the cluster's secret). */
    public Member(String name, String address, long joinedAt) {
        this(name, address, joinedAt, null);
    }

    /** This member with the run {@code run} (null: not known). */
    Member withBoot(@Nullable String run) {
        return java.util.Objects.equals(run, boot) ? this : new Member(name, address, joinedAt, run);
    }

    /** This same run of the node, registered again at {@code at} (etcd had forgotten its lease). */
    Member joinedAgainAt(long at) {
        return new Member(name, address, at, boot);
    }

    @Override
    public int compareTo(Member o) {
        return name.compareTo(o.name);
    }

    /**
     * Whether {@code other} is this same node. Nodes are told apart by name: a node that registers again after
     * its lease expired comes back with a new join time and is still the same node.
     */
    boolean isSameNode(Member other) {
        return name.equals(other.name);
    }

    /** Whether this member joined before {@code other} (by join time, then name). */
    boolean joinedBefore(Member other) {
        return joinedAt < other.joinedAt || (joinedAt == other.joinedAt && name.compareTo(other.name) < 0);
    }
}
