package io.kvstore.service.cluster;

import io.etcd.jetcd.Client;
import io.kvstore.service.admin.AdminController;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.namespace.NamespaceRegistry;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.json.JsonMapper;

/**
 * Settings that hold for the whole cluster, kept in etcd under {@code <prefix>settings/} and applied by
 * every node as its mirror of that prefix changes: namespace declarations ({@code namespaces/<ns>}) and
 * each tier's eviction policy and watermarks ({@code eviction-policy/<TIER>}). A node that joins later
 * applies them all when it first reads the prefix.
 */
public final class ClusterSettings implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ClusterSettings.class);
    private static final String NAMESPACES = "namespaces/";
    private static final String POLICY = "eviction-policy/";

    private final Client etcd;
    private final String prefix;
    private final JsonMapper json;
    private final NamespaceRegistry namespaces;
    private final AdminController admin;
    private final PrefixMirror mirror;
    private final Map<String, byte[]> applied = new TreeMap<>();

    public ClusterSettings(
            Client etcd,
            ClusterProperties properties,
            JsonMapper json,
            NamespaceRegistry namespaces,
            AdminController admin) {
        this.etcd = etcd;
        this.prefix = properties.keyPrefix() + "settings/";
        this.json = json;
        this.namespaces = namespaces;
        this.admin = admin;
        this.mirror = new PrefixMirror(etcd, prefix, this::apply, 5000);
    }

    /** Reads and applies every setting, then follows changes (the membership resyncs this mirror too). */
    public void start(Membership membership) throws Exception {
        mirror.resync();
        membership.resyncWithRenewals(mirror);
    }

    /** Publishes a namespace declaration to every node. */
    public void publishNamespace(String namespace, NamespaceDeclaration declaration) throws Exception {
        put(NAMESPACES + namespace, json.writeValueAsBytes(declaration));
    }

    /** Publishes tiers' eviction policies and watermarks (as applied on this node) to every node. */
    public void publishPolicy(Map<String, AdminController.PolicyView> policies) throws Exception {
        for (var e : policies.entrySet()) {
            put(POLICY + e.getKey(), json.writeValueAsBytes(e.getValue()));
        }
    }

    private void put(String key, byte[] value) throws Exception {
        etcd.getKVClient()
                .put(PrefixMirror.bytes(prefix + key), io.etcd.jetcd.ByteSequence.from(value))
                .get(5, TimeUnit.SECONDS);
    }

    private synchronized void apply(Map<String, byte[]> entries, long revision) {
        for (var e : entries.entrySet()) {
            String key = e.getKey();
            if (java.util.Arrays.equals(applied.get(key), e.getValue())) {
                continue;
            }
            try {
                if (key.startsWith(NAMESPACES)) {
                    String ns = key.substring(NAMESPACES.length());
                    NamespaceDeclaration declaration = json.readValue(e.getValue(), NamespaceDeclaration.class);
                    var outcome = namespaces.declare(ns, declaration.toSpec(), declaration.tenant());
                    if (outcome == NamespaceRegistry.Outcome.CREATED) {
                        log.info("cluster: namespace '{}' declared from the cluster settings", ns);
                    }
                } else if (key.startsWith(POLICY)) {
                    String tier = key.substring(POLICY.length());
                    AdminController.PolicyView view = json.readValue(e.getValue(), AdminController.PolicyView.class);
                    var current = admin.evictionPolicy().get(tier);
                    if (current == null) {
                        log.info("cluster: eviction policy for {} ignored: this node has no such tier", tier);
                    } else if (!Objects.equals(current, view)) {
                        admin.setEvictionPolicy(Map.of(tier, view));
                        log.info(
                                "cluster: {} eviction policy {} (watermarks {} / {}) applied from the cluster settings",
                                tier,
                                view.policy(),
                                view.highWatermark(),
                                view.lowWatermark());
                    }
                }
                applied.put(key, e.getValue());
            } catch (InvalidRequestException
                    | io.kvstore.service.error.ConflictException
                    | IllegalArgumentException ex) {
                log.warn("cluster: setting {} not applied: {}", key, ex.getMessage());
                applied.put(key, e.getValue());
            } catch (RuntimeException ex) {
                log.warn("cluster: setting {} not applied: {}", key, ex.toString());
            }
        }
        applied.keySet().retainAll(entries.keySet());
    }

    /** The cluster's eviction policies as stored in etcd, by tier. */
    synchronized Map<String, AdminController.PolicyView> policies() {
        Map<String, AdminController.PolicyView> out = new TreeMap<>();
        applied.forEach((k, v) -> {
            if (k.startsWith(POLICY)) {
                out.put(
                        k.substring(POLICY.length()),
                        json.readValue(v, new TypeReference<AdminController.PolicyView>() {}));
            }
        });
        return out;
    }

    @Override
    public void close() {
        mirror.close();
    }
}
