package io.kvstore.service.cluster;

/**
 * A live node as its etcd key announces it: its unique name, the base URL of its HTTP API, and when this
 * run of the node joined (so every node knows which members are new and whose runs they just took).
 *
 * @param name the node's {@code kvstore.cluster.node-name}
 * @param address the node's {@code kvstore.cluster.advertised-address}, e.g. {@code http://10.0.0.5:8080}
 * @param joinedAt when the node (this process) joined, in epoch milliseconds
 */
public record Member(String name, String address, long joinedAt) implements Comparable<Member> {

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
