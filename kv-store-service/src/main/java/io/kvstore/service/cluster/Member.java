package io.kvstore.service.cluster;

/**
 * A live node as its etcd key announces it: its unique name and the base URL of its HTTP API.
 *
 * @param name the node's {@code kvstore.cluster.node-name}
 * @param address the node's {@code kvstore.cluster.advertised-address}, e.g. {@code http://10.0.0.5:8080}
 */
public record Member(String name, String address) implements Comparable<Member> {

    @Override
    public int compareTo(Member o) {
        return name.compareTo(o.name);
    }
}
