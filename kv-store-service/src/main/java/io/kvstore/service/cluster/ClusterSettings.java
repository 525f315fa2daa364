package io.kvstore.service.cluster;

import io.etcd.jetcd.Client;
import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.service.admin.AdminController;
import io.kvstore.service.blocks.BlockService;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.namespace.NamespaceRegistry;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
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
    private static final String PINS = "pins/";
    /**
     * How long a namespace delete applied from etcd waits for the stores into it under way: settings are applied on
     * the etcd watch and the membership renewal's thread, which a frame timeout (15 s) would hold past the member
     * lease's TTL; a delete refused for a store still running is tried again at the next change or renewal.
     */
    static final Duration WRITES_WAIT = Duration.ofSeconds(1);
    /** etcd 3.4 refuses a transaction of more than 128 operations by default ({@code --max-txn-ops}). */
    private static final int OPS_PER_TXN = 100;

    private final Client etcd;
    private final String prefix;
    private final JsonMapper json;
    private final NamespaceRegistry namespaces;
    private final AdminController admin;
    private final BlockService blocks;
    private final ClusterPins pins;
    private final PrefixMirror mirror;
    private final Map<String, byte[]> applied = new TreeMap<>();
    /**
     * Per key applied: etcd's create revision of the setting. For a namespace, the registry also keeps on disk the
     * create revision of the declaration its own was applied from ({@link NamespaceRegistry#clusterRevision}),
     * so that a node restarted after the namespace was deleted and declared anew still tells the two apart.
     */
    private final Map<String, Long> generations = new TreeMap<>();
    /** Namespace keys this node could not apply (pinned or leased blocks of the old declaration), logged once. */
    private final Set<String> refused = new HashSet<>();
    /** The last settings applied, applied again at each renewal while some namespace is refused. */
    private @Nullable Settings last;

    /** Settings as the mirror handed them over: each key's value and create revision, at an etcd revision. */
    private record Settings(Map<String, byte[]> entries, Map<String, Long> created, long revision) {}

    public ClusterSettings(
            Client etcd,
            ClusterProperties properties,
            JsonMapper json,
            NamespaceRegistry namespaces,
            AdminController admin,
            BlockService blocks,
            ClusterPins pins) {
        this.etcd = etcd;
        this.blocks = blocks;
        this.pins = pins;
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
        membership.onRenewal(pins::renewed);
        membership.onRenewal(this::retryRefused);
    }

    /** Applies the last settings again while some namespace could not be applied (its blocks were held). */
    private synchronized void retryRefused() {
        Settings settings = last;
        if (!refused.isEmpty() && settings != null) {
            apply(settings.entries(), settings.created(), settings.revision());
        }
    }

    /** Withdraws a deleted namespace's declaration and its pins, so no node declares it again. */
    public void withdrawNamespace(String namespace) throws Exception {
        // one transaction: a failure between two deletes would leave pins for a later namespace of the same name
        etcd.getKVClient()
                .txn()
                .Then(
                        io.etcd.jetcd.op.Op.delete(
                                PrefixMirror.bytes(prefix + NAMESPACES + namespace),
                                io.etcd.jetcd.options.DeleteOption.DEFAULT),
                        io.etcd.jetcd.op.Op.delete(
                                PrefixMirror.bytes(prefix + PINS + namespace + "/"),
                                io.etcd.jetcd.options.DeleteOption.builder()
                                        .isPrefix(true)
                                        .build()))
                .commit()
                .get(5, TimeUnit.SECONDS);
    }

    /**
     * Writes pins ({@code pin} true) or removes them, in transactions of at most {@value #OPS_PER_TXN} keys;
     * returns the etcd revision of the last one (0 for no keys).
     */
    public long publishPins(List<BlockKey> keys, boolean pin) throws Exception {
        long revision = 0;
        for (int from = 0; from < keys.size(); from += OPS_PER_TXN) {
            var txn = etcd.getKVClient().txn();
            List<io.etcd.jetcd.op.Op> ops = new java.util.ArrayList<>();
            for (BlockKey key : keys.subList(from, Math.min(keys.size(), from + OPS_PER_TXN))) {
                var name = PrefixMirror.bytes(
                        prefix + PINS + key.namespace() + "/" + key.hash().hex());
                ops.add(
                        pin
                                ? io.etcd.jetcd.op.Op.put(
                                        name, PrefixMirror.bytes("1"), io.etcd.jetcd.options.PutOption.DEFAULT)
                                : io.etcd.jetcd.op.Op.delete(name, io.etcd.jetcd.options.DeleteOption.DEFAULT));
            }
            revision = txn.Then(ops.toArray(io.etcd.jetcd.op.Op[]::new))
                    .commit()
                    .get(5, TimeUnit.SECONDS)
                    .getHeader()
                    .getRevision();
        }
        return revision;
    }

    /**
     * Publishes a namespace declaration to every node, unless etcd already holds another one for the name (another
     * tenant's, or another layout, declared at the same time through another node): then nothing is written and
     * the declaration etcd holds is returned. Null when etcd now holds this declaration.
     */
    public @Nullable NamespaceDeclaration publishNamespace(String namespace, NamespaceDeclaration declaration)
            throws Exception {
        io.etcd.jetcd.ByteSequence key = PrefixMirror.bytes(prefix + NAMESPACES + namespace);
        io.etcd.jetcd.ByteSequence value = io.etcd.jetcd.ByteSequence.from(json.writeValueAsBytes(declaration));
        while (true) {
            var answer = etcd.getKVClient()
                    .txn()
                    .If(new io.etcd.jetcd.op.Cmp(
                            key, io.etcd.jetcd.op.Cmp.Op.EQUAL, io.etcd.jetcd.op.CmpTarget.version(0)))
                    .Then(io.etcd.jetcd.op.Op.put(key, value, io.etcd.jetcd.options.PutOption.DEFAULT))
                    .Else(io.etcd.jetcd.op.Op.get(key, io.etcd.jetcd.options.GetOption.DEFAULT))
                    .commit()
                    .get(5, TimeUnit.SECONDS);
            if (answer.isSucceeded()) {
                return null;
            }
            var kvs = answer.getGetResponses().getFirst().getKvs();
            if (kvs.isEmpty()) {
                continue; // withdrawn between the compare and the read: try again
            }
            NamespaceDeclaration held =
                    json.readValue(kvs.getFirst().getValue().getBytes(), NamespaceDeclaration.class);
            // a declaration without a tenant was made before tenants: any tenant's same layout matches it
            boolean same = held.toSpec().equals(declaration.toSpec())
                    && (held.tenant() == null || held.tenant().equals(declaration.tenant()));
            return same ? null : held;
        }
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

    /** Applies the settings as etcd held them at {@code revision} (the mirror's listener; tests call it). */
    synchronized void apply(Map<String, byte[]> entries, Map<String, Long> created, long revision) {
        last = new Settings(entries, created, revision);
        Set<BlockKey> pinned = new HashSet<>();
        for (var e : entries.entrySet()) {
            String key = e.getKey();
            if (key.startsWith(PINS)) {
                int slash = key.lastIndexOf('/');
                if (slash > PINS.length()) {
                    try {
                        pinned.add(new BlockKey(
                                key.substring(PINS.length(), slash), BlockHash.ofHex(key.substring(slash + 1))));
                    } catch (RuntimeException ex) {
                        log.warn("cluster: pin {} ignored: {}", key, ex.getMessage());
                    }
                }
                continue;
            }
            if (java.util.Arrays.equals(applied.get(key), e.getValue())
                    && Objects.equals(generations.get(key), created.get(key))) {
                continue;
            }
            try {
                if (key.startsWith(NAMESPACES)) {
                    String ns = key.substring(NAMESPACES.length());
                    NamespaceDeclaration declaration = json.readValue(e.getValue(), NamespaceDeclaration.class);
                    var spec = declaration.toSpec();
                    var here = namespaces.declared(ns);
                    String owner = namespaces.owner(ns);
                    boolean reowned = here != null
                            && owner != null
                            && declaration.tenant() != null
                            && !owner.equals(declaration.tenant());
                    // a later create revision than the one this node's declaration was applied from: the namespace
                    // was deleted and declared anew while this node missed the delete (one told of it directly
                    // removed its declaration and declared the new one, which has no revision yet); kept on disk,
                    // so a restart in between does not hide it
                    Long appliedFrom = here == null ? null : namespaces.clusterRevision(ns);
                    Long createdAt = created.get(key);
                    boolean redeclared = appliedFrom != null && createdAt != null && !appliedFrom.equals(createdAt);
                    if (here != null && (!here.equals(spec) || reowned || redeclared)) {
                        // etcd declares it with another layout, for another tenant, or anew: deleted and declared
                        // anew through another node while this one missed the delete; its blocks are of the old
                        // layout, the old tenant's or the deleted namespace's and go with it
                        int deleted;
                        try {
                            deleted = blocks.deleteNamespace(ns, WRITES_WAIT);
                        } catch (io.kvstore.service.error.ConflictException ex) {
                            // pinned or leased here: not applied, tried again at the next change or renewal
                            if (refused.add(key)) {
                                log.warn(
                                        "cluster: namespace '{}' declared anew in the cluster settings is not applied"
                                                + " here until its old blocks are released; tried again at every"
                                                + " renewal: {}",
                                        ns,
                                        ex.getMessage());
                            }
                            continue;
                        }
                        log.info(
                                "cluster: namespace '{}' deleted ({} blocks): declared anew {}",
                                ns,
                                deleted,
                                reowned
                                        ? "by another tenant"
                                        : redeclared
                                                ? "by the same tenant with the same layout"
                                                : "with another layout");
                    }
                    // through the block service, as a declaration over the API: it also sets write-through
                    var outcome = blocks.declare(ns, spec, declaration.tenant());
                    if (outcome == NamespaceRegistry.Outcome.CREATED) {
                        log.info("cluster: namespace '{}' declared from the cluster settings", ns);
                    }
                    if (createdAt != null) {
                        namespaces.recordClusterRevision(ns, createdAt);
                    }
                    if (refused.remove(key)) {
                        log.info("cluster: namespace '{}' declared anew is applied here now", ns);
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
                generations.put(key, created.get(key));
            } catch (InvalidRequestException
                    | io.kvstore.service.error.ConflictException
                    | IllegalArgumentException ex) {
                log.warn("cluster: setting {} not applied: {}", key, ex.getMessage());
                applied.put(key, e.getValue());
                generations.put(key, created.get(key));
            } catch (RuntimeException ex) {
                log.warn("cluster: setting {} not applied: {}", key, ex.toString());
            }
        }
        Set<String> kept = new HashSet<>(entries.keySet());
        for (String key : applied.keySet()) {
            if (key.startsWith(NAMESPACES) && !entries.containsKey(key) && !withdrawn(key)) {
                kept.add(key); // looked at again with the next settings
            }
        }
        refused.retainAll(kept);
        applied.keySet().retainAll(kept);
        generations.keySet().retainAll(kept);
        pins.wanted(pinned, revision);
    }

    /**
     * A namespace deleted through another node while this one missed the call: deleted here too, unless etcd
     * declares it again already. A watch can deliver the withdrawal after the namespace was declared anew
     * and this node told of it (and stored its new blocks); that snapshot is older than the declaration, and
     * deleting on its word would lose the new blocks. False when the withdrawal is to be looked at again with the
     * next settings: the namespace is kept (a later snapshot shows the new declaration: a new create revision),
     * or its blocks are pinned or leased here (deleted once they are released).
     */
    private boolean withdrawn(String key) {
        String namespace = key.substring(NAMESPACES.length());
        try {
            if (declaredInEtcd(namespace)) {
                log.info("cluster: namespace '{}' was withdrawn and is declared again: kept", namespace);
                return false;
            }
            if (namespaces.all().containsKey(namespace)) {
                int deleted = blocks.deleteNamespace(namespace, WRITES_WAIT);
                log.info(
                        "cluster: namespace '{}' deleted ({} blocks): withdrawn from the cluster settings",
                        namespace,
                        deleted);
            }
        } catch (io.kvstore.service.error.ConflictException ex) {
            if (refused.add(key)) {
                log.warn(
                        "cluster: namespace '{}' withdrawn from the cluster settings is not deleted here until its"
                                + " blocks are released; tried again at every renewal: {}",
                        namespace,
                        ex.getMessage());
            }
            return false;
        } catch (RuntimeException ex) {
            log.warn(
                    "cluster: namespace '{}' withdrawn from the cluster settings but not deleted here: {}",
                    namespace,
                    ex.getMessage());
        }
        return true;
    }

    /** Whether etcd declares the namespace now; false when etcd cannot be read (the withdrawal then stands). */
    private boolean declaredInEtcd(String namespace) {
        try {
            return etcd.getKVClient()
                            .get(PrefixMirror.bytes(prefix + NAMESPACES + namespace))
                            .get(5, TimeUnit.SECONDS)
                            .getCount()
                    > 0;
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return false;
        }
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
