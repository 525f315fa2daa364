package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A one-sided write (reserve) asked of a node the blocks are not placed on: the bytes would land in this
 * node's memory, where lookups do not look for them. Answered 421 with the nodes the blocks belong to.
 */
final class NotPlacedHereException extends RuntimeException {

    /** Where some of the blocks asked belong: the node, its address and those blocks' hashes. */
    record Owner(String node, String address, List<String> blockHashes) {}

    private final transient List<Owner> owners;

    NotPlacedHereException(
            String namespace, Member self, Map<Member, List<Integer>> targets, List<BlockHash> hashes, int replicas) {
        super(message(namespace, self, targets, replicas), null, false, false);
        List<Owner> out = new ArrayList<>();
        targets.forEach((m, indices) -> out.add(new Owner(
                m.name(),
                m.address(),
                indices.stream().map(i -> hashes.get(i).hex()).toList())));
        this.owners = List.copyOf(out);
    }

    List<Owner> owners() {
        return owners;
    }

    private static String message(String namespace, Member self, Map<Member, List<Integer>> targets, int replicas) {
        if (replicas > 1) {
            return "namespace '" + namespace + "' keeps " + replicas + " copies of each block and a one-sided write "
                    + "reaches one node: store these blocks with PUT /v1/namespaces/" + namespace
                    + "/blocks through any node";
        }
        StringBuilder where = new StringBuilder();
        for (Member m : targets.keySet()) {
            if (!m.isSameNode(self)) {
                where.append(where.isEmpty() ? "" : ", ")
                        .append(m.name())
                        .append(" (")
                        .append(m.address())
                        .append(')');
            }
        }
        return "node " + self.name() + " is not where these blocks are placed: a one-sided write lands in the memory "
                + "of the node asked, so reserve them at " + where + " (see owners), or store them with PUT "
                + "/v1/namespaces/" + namespace + "/blocks through any node";
    }
}
