package io.kvstore.service.cluster;

import jakarta.validation.constraints.AssertTrue;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code kvstore.cluster.*}: cluster mode on etcd. Off by default: a single node needs no etcd.
 *
 * @param enabled join a cluster through etcd; false (the default) runs one node alone
 * @param endpoints etcd client URLs, e.g. {@code http://127.0.0.1:2379}
 * @param nodeName this node's name in the member set, unique in the cluster; peers sign the calls they
 *     forward to it for this name, and it refuses those signed for another ({@code PeerCredentials}); 1 to 128
 *     letters, digits, {@code . _ : -}: it travels in HTTP headers and names this node's key in etcd
 * @param advertisedAddress the base URL peers and engines reach this node's HTTP API at, e.g.
 *     {@code http://10.0.0.5:8080}
 * @param keyPrefix the etcd key prefix every kvstore key lives under; clusters sharing one etcd use
 *     different prefixes
 * @param ttl the membership lease's time to live: a node that stops renewing leaves the set within it
 * @param replicas how many nodes hold each block unless a namespace says otherwise
 * @param namespaceReplicas replica count per namespace
 * @param runBlocks mean length, in blocks, of the runs a prompt is placed in (one owner per run)
 * @param handoffGrace how long after a membership change a lookup also asks each block's previous owner
 * @param peerTimeout how long a node waits for a peer's answer before counting its blocks as missing
 * @param peerToken bearer token sent on node-to-node calls when {@code secret} is unset (older
 *     configurations; the peer then applies this token's rules, not the caller's)
 * @param secret shared by every node (at least 16 characters): nodes sign the caller they forward with it,
 *     and a peer enforces that caller's tenant rules ({@code PeerCredentials}); read by the security
 *     configuration as {@code kvstore.cluster.secret}
 */
@Validated
@ConfigurationProperties("kvstore.cluster")
public record ClusterProperties(
        @DefaultValue("false") boolean enabled,
        @NotNull @DefaultValue List<String> endpoints,
        @NotNull @DefaultValue("") String nodeName,
        @NotNull @DefaultValue("") String advertisedAddress,
        @NotBlank @DefaultValue("/kvstore/") String keyPrefix,
        @NotNull @DefaultValue("10s") Duration ttl,
        @Min(1) @Max(16) @DefaultValue("1") int replicas,
        @NotNull @DefaultValue Map<String, Integer> namespaceReplicas,
        @Min(1) @Max(4096) @DefaultValue("16") int runBlocks,
        @NotNull @DefaultValue("5m") Duration handoffGrace,
        @NotNull @DefaultValue("5s") Duration peerTimeout,
        String peerToken,
        String secret) {

    private static final java.util.regex.Pattern NODE_NAME = java.util.regex.Pattern.compile("[A-Za-z0-9._:-]{1,128}");

    @AssertTrue(message = "kvstore.cluster.enabled needs endpoints, node-name and advertised-address")
    public boolean isComplete() {
        return !enabled
                || (endpoints != null
                        && !endpoints.isEmpty()
                        && nodeName != null
                        && !nodeName.isBlank()
                        && advertisedAddress != null
                        && !advertisedAddress.isBlank());
    }

    /**
     * Whether {@code kvstore.cluster.node-name} can travel in the headers that name nodes ({@code Kvstore-Peer-Target},
     * {@code Kvstore-Forwarded-By}): a name with a control character, a line break or a character outside ISO-8859-1
     * would start the node and break every call forwarded to it. An empty one is reported by {@link #isComplete}.
     */
    @AssertTrue(
            message =
                    "kvstore.cluster.node-name must be 1 to 128 letters, digits, '.', '_', ':' or '-' (peers send it in"
                            + " the Kvstore-Peer-Target header)")
    public boolean isNodeNameValid() {
        return !enabled
                || nodeName == null
                || nodeName.isEmpty()
                || NODE_NAME.matcher(nodeName).matches();
    }

    @AssertTrue(message = "kvstore.cluster.secret must have at least 16 characters")
    public boolean isSecretLongEnough() {
        return secret == null || secret.isEmpty() || secret.length() >= 16;
    }

    @AssertTrue(message = "kvstore.cluster.ttl must be between 2 s and 1 h (etcd leases count whole seconds)")
    public boolean isTtlInRange() {
        return ttl == null || (ttl.toSeconds() >= 2 && ttl.compareTo(Duration.ofHours(1)) <= 0);
    }

    @AssertTrue(message = "kvstore.cluster.namespace-replicas must be between 1 and 16")
    public boolean isNamespaceReplicasInRange() {
        return namespaceReplicas == null
                || namespaceReplicas.values().stream().allMatch(r -> r != null && r >= 1 && r <= 16);
    }

    /** The replica count of {@code namespace}. */
    public int replicasOf(String namespace) {
        return namespaceReplicas.getOrDefault(namespace, replicas);
    }
}
