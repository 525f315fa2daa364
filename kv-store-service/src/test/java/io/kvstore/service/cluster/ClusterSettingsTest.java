package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.json.JsonMapper;

/** The cluster's settings as one node follows them, against a real etcd and a real engine. */
class ClusterSettingsTest {

    private static final int BLOCK = 4096;

    @RegisterExtension
    static final EtcdExtension etcd = new EtcdExtension();

    /**
     * An unpin tells the nodes first and then deletes the pins in etcd. When that delete never happens (etcd
     * could not be written: the caller got 503; or the node asked died in between), the pin is still in etcd,
     * and the nodes pin the block again at their next renewal rather than leaving it free to be evicted.
     */
    @Test
    void aPinStillInEtcdAfterAnUnpinThatNeverReachedItIsPinnedAgain() throws Exception {
        try (Arena arena = Arena.ofShared();
                Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            TierEngine engine = new TierEngine(
                    List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 64L * BLOCK, BLOCK)),
                    Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.95, 0.9, false)),
                    Duration.ofSeconds(30),
                    EngineEvents.NONE,
                    Clock.systemUTC());
            BlockKey held = new BlockKey("ns", BlockHash.ofLong(7));
            engine.put(held, null, arena.allocate(BLOCK));
            ClusterPins pins = new ClusterPins(engine);
            ClusterProperties properties = MembershipTest.properties(etcd.endpoint(), "/s1/", "a");
            ClusterSettings settings =
                    new ClusterSettings(client, properties, JsonMapper.builder().build(), null, null, null, pins);
            Membership membership = MembershipTest.join(client, properties, System.currentTimeMillis());
            try {
                settings.publishPins(List.of(held), true);
                settings.start(membership);
                await().atMost(Duration.ofSeconds(30)).until(() -> pins.pinnedHere() == 1);
                assertThat(pins.remove(List.of(held))).isOne(); // the unpin, told to this node ...
                // ... whose delete never reached etcd
                assertThat(client.getKVClient()
                                .get(PrefixMirror.bytes(
                                        "/s1/settings/pins/ns/" + held.hash().hex()))
                                .get(30, TimeUnit.SECONDS)
                                .getCount())
                        .isOne();
                // renewals come once a third of the 3 s TTL
                await().atMost(Duration.ofSeconds(30)).until(() -> pins.pinnedHere() == 1);
                assertThat(engine.unpin(List.of(held)))
                        .as("pinned in the engine")
                        .isOne();
            } finally {
                settings.close();
                membership.close();
                engine.close();
            }
        }
    }
    /**
     * A namespace deleted through another node and declared again at once: this node was told of the new
     * declaration and stored blocks in it, and only then does its watch deliver the withdrawal, a snapshot
     * older than the declaration. The namespace and its new blocks stay, since etcd declares it again.
     */
    @Test
    void aWithdrawalDeliveredAfterTheNamespaceWasDeclaredAgainKeepsItsNewBlocks() throws Exception {
        try (ClusterNodes.Node node = ClusterNodes.start(etcd.endpoint(), "a", etcd.dir(), "/s2/");
                Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            var declared = ClusterNodes.send(node.base(), "PUT", "/v1/namespaces/llama", ClusterNodes.DECLARATION);
            assertThat(declared.statusCode()).as(declared.body()).isEqualTo(201);
            List<BlockHash> chain = ClusterNodes.chain(10, 7);
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> ClusterNodes.store(node.base(), "llama", ClusterNodes.frames(chain, 0, 10))
                                    .statusCode()
                            == 200);
            // the settings as a lagging watch last showed them: the namespace's declaration withdrawn
            Snapshot read = Snapshot.of(client, "/s2/settings/");
            assertThat(read.entries().remove("namespaces/llama")).isNotNull();
            read.created().remove("namespaces/llama");
            node.context().getBean(ClusterSettings.class).apply(read.entries(), read.created(), read.revision() - 1);

            var lookup = ClusterNodes.send(
                    node.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson("llama", chain, false));
            assertThat(lookup.statusCode()).as(lookup.body()).isEqualTo(200);
            assertThat(lookup.body()).contains("\"matchedBlocks\":10");
        }
    }

    /**
     * A write-through namespace a node declares from the cluster settings (declared through another node while
     * this one missed the call, or before it joined) is written through there too: a block stored on it is on
     * its NVMe tier when the store is acknowledged, as on the node the namespace was declared through.
     */
    @Test
    void aWriteThroughNamespaceDeclaredFromTheSettingsIsWrittenThroughOnThisNode() throws Exception {
        int port = io.kvstore.service.ServiceProcesses.freePort();
        List<String> args = new java.util.ArrayList<>(
                ClusterNodes.args(etcd.endpoint(), "a", port, etcd.dir().resolve("wt-a"), "/s5/"));
        args.remove("--kvstore.tiers.nvme.enabled=false");
        args.addAll(List.of(
                "--kvstore.tiers.nvme.capacity=4MB",
                "--kvstore.tiers.nvme.file-size=1MB",
                "--kvstore.tiers.nvme.slab-size=256KB",
                "--kvstore.tiers.nvme.io-threads=2"));
        try (Client client = EtcdClients.connect(List.of(etcd.endpoint()));
                var context = new org.springframework.boot.builder.SpringApplicationBuilder(
                                io.kvstore.service.KvStoreApplication.class)
                        .run(args.toArray(String[]::new))) {
            String base = "http://127.0.0.1:" + port;
            // as another node publishes a declaration
            client.getKVClient()
                    .put(
                            PrefixMirror.bytes("/s5/settings/namespaces/durable"),
                            PrefixMirror.bytes(ClusterNodes.DECLARATION.replace(
                                    "\"hashSeed\":\"0\"", "\"hashSeed\":\"0\",\"durability\":\"write-through\"")))
                    .get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> ClusterNodes.send(base, "GET", "/v1/namespaces/durable", null)
                                    .statusCode()
                            == 200);
            List<BlockHash> chain = ClusterNodes.chain(10, 9);
            var stored = ClusterNodes.store(base, "durable", ClusterNodes.frames(chain, 0, 10));
            assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
            var tiers = ClusterNodes.send(
                    base, "GET", "/admin/tiers", null, "Authorization", "Bearer " + ClusterNodes.ADMIN_TOKEN);
            int onNvme = 0;
            for (var tier : JsonMapper.builder().build().readTree(tiers.body()).path("tiers")) {
                if (tier.path("tier").asString().equals("NVME")) {
                    onNvme = tier.path("blocks").asInt();
                }
            }
            assertThat(onNvme).as(tiers.body()).isEqualTo(10);
        }
    }

    /**
     * A namespace deleted through another node while this one missed the call, then declared anew with
     * another layout: this node takes the new declaration and drops the old blocks, rather than keeping the
     * old layout (and answering its blocks, whose bytes are laid out the old way) for good.
     */
    @Test
    void aNamespaceDeclaredAnewWithAnotherLayoutReplacesTheOldOneAndItsBlocks() throws Exception {
        try (ClusterNodes.Node node = ClusterNodes.start(etcd.endpoint(), "relayout", etcd.dir(), "/s6/");
                Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            List<BlockHash> chain = declareAndStoreTen(node, 8);
            var key = PrefixMirror.bytes("/s6/settings/namespaces/llama");
            String old = valueOf(client, key);
            // the same tenant's new declaration: two layers of 32 dims (blocks of the same size)
            String anew = old.replace("\"layers\":1", "\"layers\":2").replace("\"headDim\":64", "\"headDim\":32");
            assertThat(anew).isNotEqualTo(old);
            client.getKVClient().put(key, PrefixMirror.bytes(anew)).get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> ClusterNodes.send(node.base(), "GET", "/v1/namespaces/llama", null)
                            .body()
                            .contains("\"layers\":2"));
            assertNothingMatched(node, chain);
        }
    }

    /**
     * A namespace deleted through another node while this one missed the call, then declared anew by another
     * tenant with the same layout: this node takes the new owner and drops the old tenant's blocks, rather
     * than keeping the old owner (who could go on reading and writing here) and its blocks under a name the
     * cluster now gives to another tenant.
     */
    @Test
    void aNamespaceDeclaredAnewByAnotherTenantWithTheSameLayoutTakesTheNewOwnerAndDropsTheOldBlocks() throws Exception {
        try (ClusterNodes.Node node = ClusterNodes.start(etcd.endpoint(), "reowned", etcd.dir(), "/s10/");
                Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            // protected mode: this loopback client is tenant "local"
            List<BlockHash> chain = declareAndStoreTen(node, 9);
            var key = PrefixMirror.bytes("/s10/settings/namespaces/llama");
            String old = valueOf(client, key);
            String anew = old.replace("\"tenant\" : \"local\"", "\"tenant\" : \"other\"")
                    .replace("\"tenant\":\"local\"", "\"tenant\":\"other\"");
            assertThat(anew).isNotEqualTo(old);
            client.getKVClient().put(key, PrefixMirror.bytes(anew)).get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> ClusterNodes.send(node.base(), "GET", "/v1/namespaces/llama", null)
                                    .statusCode()
                            == 403);
            var tenants = ClusterNodes.send(
                    node.base(), "GET", "/admin/tenants", null, "Authorization", "Bearer " + ClusterNodes.ADMIN_TOKEN);
            assertThat(tenants.statusCode()).as(tenants.body()).isEqualTo(200);
            assertThat(tenants.body())
                    .doesNotContainPattern("\"tenant\":\"local\",\"tiers\":\\{\"DRAM\":\\{\"bytes\":[1-9]");
        }
    }

    /**
     * A namespace deleted through another node while this one missed the call, then declared anew by the same
     * tenant with the same layout: this node sees both in one snapshot (it was unreachable, or its watch lagged),
     * where the declaration reads the same but its key was created again. It drops the old blocks, as every other
     * node did at the delete, rather than keeping (and answering) blocks of a namespace that was deleted.
     */
    @Test
    void aNamespaceDeclaredAnewWithTheSameLayoutSeenInOneSnapshotDropsTheOldBlocks() throws Exception {
        try (ClusterNodes.Node node = ClusterNodes.start(etcd.endpoint(), "redeclared", etcd.dir(), "/s12/");
                Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            List<BlockHash> chain = declareAndStoreTen(node, 12);
            ClusterSettings settings = node.context().getBean(ClusterSettings.class);
            Snapshot now = Snapshot.of(client, "/s12/settings/");
            settings.apply(now.entries(), now.created(), now.revision()); // as the watch applies it
            // the next snapshot of a node that missed the delete and the new declaration: the same value, its key
            // created again after this read
            now.created().put("namespaces/llama", now.revision() + 2);
            settings.apply(now.entries(), now.created(), now.revision() + 2);

            assertThat(ClusterNodes.send(node.base(), "GET", "/v1/namespaces/llama", null)
                            .statusCode())
                    .isEqualTo(200);
            assertNothingMatched(node, chain);
        }
    }

    /**
     * A namespace declared anew with another layout while this node, which missed the delete, holds leased blocks
     * of the old declaration: it cannot drop them yet and keeps the old declaration meanwhile, then takes the new
     * one once they are released (at its next renewal), rather than keeping the old layout for good.
     */
    @Test
    void aNamespaceDeclaredAnewWhileOldBlocksAreLeasedHereIsReplacedOnceTheyAreReleased() throws Exception {
        try (ClusterNodes.Node node = ClusterNodes.start(etcd.endpoint(), "leased", etcd.dir(), "/s11/");
                Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            List<BlockHash> chain = declareAndStoreTen(node, 11);
            var leased = ClusterNodes.send(
                    node.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson("llama", chain.subList(0, 5), true));
            assertThat(leased.statusCode()).as(leased.body()).isEqualTo(200);
            String leaseId = JsonMapper.builder()
                    .build()
                    .readTree(leased.body())
                    .path("leases")
                    .get(0)
                    .path("lease")
                    .path("id")
                    .asString();
            var key = PrefixMirror.bytes("/s11/settings/namespaces/llama");
            String old = valueOf(client, key);
            String anew = old.replace("\"layers\":1", "\"layers\":2").replace("\"headDim\":64", "\"headDim\":32");
            client.getKVClient().put(key, PrefixMirror.bytes(anew)).get(30, TimeUnit.SECONDS);
            // the blocks not leased are dropped; the leased five hold the old declaration here
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> ClusterNodes.send(
                                    node.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson("llama", chain, false))
                            .body()
                            .contains("\"matchedBlocks\":5"));
            assertThat(ClusterNodes.send(node.base(), "GET", "/v1/namespaces/llama", null)
                            .body())
                    .contains("\"layers\":1");

            var released = ClusterNodes.send(node.base(), "DELETE", "/v1/leases/" + leaseId, null);
            assertThat(released.statusCode()).isEqualTo(204);
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> ClusterNodes.send(node.base(), "GET", "/v1/namespaces/llama", null)
                            .body()
                            .contains("\"layers\":2"));
            var lookup = ClusterNodes.send(
                    node.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson("llama", chain, false));
            assertThat(lookup.body()).contains("\"matchedBlocks\":0");
        }
    }

    /**
     * A namespace deleted through another node while this one, the only one holding its pinned blocks, could not
     * be reached: the withdrawal removes the pins with the declaration, but this node sees the withdrawal while
     * they are still pinned here. It deletes the namespace once they are unpinned, rather than keeping it for good.
     */
    @Test
    void aWithdrawalSeenWhileItsBlocksArePinnedHereDeletesTheNamespaceOnceTheyAreUnpinned() throws Exception {
        try (ClusterNodes.Node node = ClusterNodes.start(etcd.endpoint(), "pinned", etcd.dir(), "/s13/")) {
            List<BlockHash> chain = declareAndStoreTen(node, 13);
            var pinned = ClusterNodes.send(
                    node.base(),
                    "POST",
                    "/admin/pin",
                    "{\"namespace\":\"llama\",\"blockHashes\":" + ClusterNodes.hexList(chain) + "}",
                    "Authorization",
                    "Bearer " + ClusterNodes.ADMIN_TOKEN);
            assertThat(pinned.statusCode()).as(pinned.body()).isEqualTo(200);

            // as the node that deleted it withdraws it
            node.context().getBean(ClusterSettings.class).withdrawNamespace("llama");

            await().atMost(Duration.ofSeconds(20))
                    .until(() -> ClusterNodes.send(node.base(), "GET", "/v1/namespaces/llama", null)
                                    .statusCode()
                            == 404);
        }
    }

    /**
     * A node keeps its namespaces and their NVMe blocks across a restart. Restarted against the same etcd, it keeps
     * them when the cluster still declares the namespace as it applied it; but when the namespace was deleted and
     * declared anew by the same tenant with the same layout while it was down (the same value, its key created
     * again), it drops the old blocks, as every other node did at the delete, rather than answering blocks of a
     * namespace that was deleted (before, the create revision it had applied was in memory only, and lost).
     */
    @Test
    void aNamespaceDeclaredAnewWhileThisNodeWasDownDropsItsOldBlocksAtRestart() throws Exception {
        java.nio.file.Path dir = etcd.dir().resolve("restart");
        List<BlockHash> chain = ClusterNodes.chain(10, 14);
        try (Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            try (ClusterNodes.Node node = startWithNvme(dir)) {
                var declared = ClusterNodes.send(
                        node.base(),
                        "PUT",
                        "/v1/namespaces/llama",
                        ClusterNodes.DECLARATION.replace(
                                "\"hashSeed\":\"0\"", "\"hashSeed\":\"0\",\"durability\":\"write-through\""));
                assertThat(declared.statusCode()).as(declared.body()).isEqualTo(201);
                var stored = ClusterNodes.store(node.base(), "llama", ClusterNodes.frames(chain, 0, 10));
                assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
                awaitMatched(node, chain, 10); // the watch has applied the declaration
            }
            try (ClusterNodes.Node node = startWithNvme(dir)) {
                awaitMatched(node, chain, 10);
            }
            // while the node is down: deleted through another node, and declared anew the same way
            var key = PrefixMirror.bytes("/s14/settings/namespaces/llama");
            String value = valueOf(client, key);
            client.getKVClient().delete(key).get(30, TimeUnit.SECONDS);
            client.getKVClient().put(key, PrefixMirror.bytes(value)).get(30, TimeUnit.SECONDS);
            try (ClusterNodes.Node node = startWithNvme(dir)) {
                await().atMost(Duration.ofSeconds(20))
                        .until(() -> ClusterNodes.send(node.base(), "GET", "/v1/namespaces/llama", null)
                                        .statusCode()
                                == 200);
                assertNothingMatched(node, chain);
            }
        }
    }

    /** Node "restart" of prefix "/s14/" with an NVMe tier, whose data (blocks included) survive a restart. */
    private static ClusterNodes.Node startWithNvme(java.nio.file.Path dir) throws Exception {
        int port = io.kvstore.service.ServiceProcesses.freePort();
        List<String> args =
                new java.util.ArrayList<>(ClusterNodes.args(etcd.endpoint(), "restart", port, dir, "/s14/"));
        args.remove("--kvstore.tiers.nvme.enabled=false");
        args.addAll(List.of(
                "--kvstore.tiers.nvme.capacity=4MB",
                "--kvstore.tiers.nvme.file-size=1MB",
                "--kvstore.tiers.nvme.slab-size=256KB",
                "--kvstore.tiers.nvme.io-threads=2"));
        var context = new org.springframework.boot.builder.SpringApplicationBuilder(
                        io.kvstore.service.KvStoreApplication.class)
                .run(args.toArray(String[]::new));
        return new ClusterNodes.Node("restart", port, context);
    }

    /** Waits until a lookup of {@code chain} in "llama" on the node matches {@code blocks} blocks. */
    private static void awaitMatched(ClusterNodes.Node node, List<BlockHash> chain, int blocks) {
        await().atMost(Duration.ofSeconds(20))
                .until(() -> ClusterNodes.send(
                                node.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson("llama", chain, false))
                        .body()
                        .contains("\"matchedBlocks\":" + blocks));
    }

    /** The settings as etcd holds them now, as the mirror hands them to {@link ClusterSettings#apply}. */
    private record Snapshot(Map<String, byte[]> entries, Map<String, Long> created, long revision) {
        static Snapshot of(Client client, String prefix) throws Exception {
            var read = client.getKVClient()
                    .get(
                            PrefixMirror.bytes(prefix),
                            io.etcd.jetcd.options.GetOption.builder()
                                    .isPrefix(true)
                                    .build())
                    .get(30, TimeUnit.SECONDS);
            Snapshot snapshot = new Snapshot(
                    new java.util.TreeMap<>(),
                    new java.util.TreeMap<>(),
                    read.getHeader().getRevision());
            for (var kv : read.getKvs()) {
                String name = kv.getKey()
                        .toString(java.nio.charset.StandardCharsets.UTF_8)
                        .substring(prefix.length());
                snapshot.entries().put(name, kv.getValue().getBytes());
                snapshot.created().put(name, kv.getCreateRevision());
            }
            return snapshot;
        }
    }

    /**
     * Two tenants declare one name at the same moment through two nodes: the first declaration reaches etcd and
     * the second is refused there (its node answers 409), rather than overwriting the owner every node learns.
     */
    @Test
    void aDeclarationEtcdAlreadyHoldsOtherwiseIsNotOverwritten() throws Exception {
        JsonMapper json = JsonMapper.builder().build();
        var alpha = json.readValue(ClusterNodes.DECLARATION, io.kvstore.service.namespace.NamespaceDeclaration.class);
        var alphas = io.kvstore.service.namespace.NamespaceDeclaration.of(alpha.toSpec(), "alpha");
        var betas = io.kvstore.service.namespace.NamespaceDeclaration.of(alpha.toSpec(), "beta");
        var otherLayout = json.readValue(
                ClusterNodes.DECLARATION.replace("\"hashSeed\":\"0\"", "\"hashSeed\":\"1\""),
                io.kvstore.service.namespace.NamespaceDeclaration.class);
        try (Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            ClusterProperties properties = MembershipTest.properties(etcd.endpoint(), "/s7/", "a");
            try (ClusterSettings settings = new ClusterSettings(client, properties, json, null, null, null, null)) {
                assertThat(settings.publishNamespace("shared", alphas))
                        .as("first")
                        .isNull();
                assertThat(settings.publishNamespace("shared", alphas))
                        .as("again, the same")
                        .isNull();
                assertThat(settings.publishNamespace("shared", betas))
                        .as("another tenant")
                        .isEqualTo(alphas);
                assertThat(settings.publishNamespace(
                                "shared",
                                io.kvstore.service.namespace.NamespaceDeclaration.of(otherLayout.toSpec(), "alpha")))
                        .as("another layout")
                        .isEqualTo(alphas);
                var held = client.getKVClient()
                        .get(PrefixMirror.bytes("/s7/settings/namespaces/shared"))
                        .get(30, TimeUnit.SECONDS)
                        .getKvs()
                        .getFirst()
                        .getValue()
                        .getBytes();
                assertThat(json.readValue(held, io.kvstore.service.namespace.NamespaceDeclaration.class)
                                .tenant())
                        .isEqualTo("alpha");
            }
        }
    }

    /** Declares namespace "llama" on the node (201) and stores a 10-block chain of {@code seed} there (200). */
    private static List<BlockHash> declareAndStoreTen(ClusterNodes.Node node, int seed) throws Exception {
        var declared = ClusterNodes.send(node.base(), "PUT", "/v1/namespaces/llama", ClusterNodes.DECLARATION);
        assertThat(declared.statusCode()).as(declared.body()).isEqualTo(201);
        List<BlockHash> chain = ClusterNodes.chain(10, seed);
        var stored = ClusterNodes.store(node.base(), "llama", ClusterNodes.frames(chain, 0, 10));
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
        return chain;
    }

    /** A lookup of {@code chain} in "llama" on the node matches no block. */
    private static void assertNothingMatched(ClusterNodes.Node node, List<BlockHash> chain) throws Exception {
        var lookup =
                ClusterNodes.send(node.base(), "POST", "/v1/lookup", ClusterNodes.lookupJson("llama", chain, false));
        assertThat(lookup.statusCode()).as(lookup.body()).isEqualTo(200);
        assertThat(lookup.body()).contains("\"matchedBlocks\":0");
    }

    /** The value etcd holds at {@code key}, as text. */
    private static String valueOf(Client client, io.etcd.jetcd.ByteSequence key) throws Exception {
        return client.getKVClient()
                .get(key)
                .get(30, TimeUnit.SECONDS)
                .getKvs()
                .getFirst()
                .getValue()
                .toString(java.nio.charset.StandardCharsets.UTF_8);
    }
}
