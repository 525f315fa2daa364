package io.kvstore.service.cluster;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.service.api.LookupResponse;
import java.util.List;

/**
 * {@code POST /v1/lookup} on a node of a cluster: the single-node answer plus, per matched block, the node
 * holding it, and one lease per node that leased blocks (release each at its node, {@code DELETE
 * <address>/v1/leases/{id}}; its locations are in that node's registered region).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ClusterLookupResponse(
        String namespace,
        int matchedBlocks,
        long matchedTokens,
        List<String> blockHashes,
        List<String> tiers,
        List<String> nodes,
        List<NodeLease> leases) {

    /** A lease granted by one node, and where that node is. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record NodeLease(String node, String address, LookupResponse.LeaseView lease) {}
}
