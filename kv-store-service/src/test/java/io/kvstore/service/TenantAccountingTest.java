package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.quota.TenantUsage;
import io.kvstore.tier.nvme.NvmeTier;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * A tenant's bytes per tier ({@code GET /admin/tenants}, {@code kvstore_tenant_bytes}) and the tier gauges stay
 * equal to what the engine actually holds, through stores, demotion, promotion on hit, write-through, eviction
 * out of the last tier, a corrupt copy dropped, deletes and a namespace deleted and declared again.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.admin-token=admin-secret-0123456789",
            "kvstore.tiers.dram.capacity=2MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.dram.promote-on-hit=true",
            "kvstore.tiers.nvme.capacity=4MB",
            "kvstore.tiers.nvme.file-size=1MB",
            "kvstore.tiers.nvme.slab-size=256KB",
            "kvstore.transport.enabled=false",
            "kvstore.local.enabled=true",
            "kvstore.tokens[0].tenant=alpha",
            "kvstore.tokens[0].token=alpha-token-0123456789",
            "kvstore.tokens[0].write=*",
            "kvstore.tokens[0].one-sided=true",
            "kvstore.tokens[1].tenant=beta",
            "kvstore.tokens[1].token=beta-token-0123456789",
            "kvstore.tokens[1].write=*",
            "kvstore.tokens[1].one-sided=true"
        })
class TenantAccountingTest {

    static final String[] ADMIN = {"Authorization", "Bearer admin-secret-0123456789"};
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final String[] BETA = {"Authorization", "Bearer beta-token-0123456789"};

    @LocalServerPort
    int port;

    @Autowired
    TierEngine engine;

    @Autowired
    TenantUsage usage;

    @Autowired
    NamespaceRegistry namespaces;

    private Http http() {
        return new Http(port);
    }

    private void declare(String ns, String[] token, boolean writeThrough) throws Exception {
        String decl = TestLayout.declaration("m");
        if (writeThrough) {
            decl = decl.substring(0, decl.lastIndexOf('}')) + ",\"durability\":\"write-through\"}";
        }
        var r = http().json("PUT", "/v1/namespaces/" + ns, decl, token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    }

    private void store(String ns, String[] token, List<BlockHash> hashes, List<byte[]> blocks) throws Exception {
        var r = http().putBytes(
                        "/v1/namespaces/" + ns + "/blocks",
                        "application/octet-stream",
                        Http.frames(hashes, blocks, null),
                        token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }

    private java.net.http.HttpResponse<byte[]> fetch(String body) throws Exception {
        return Http.CLIENT.send(
                java.net.http.HttpRequest.newBuilder(
                                java.net.URI.create("http://127.0.0.1:" + port + "/v1/namespaces/acct-a/blocks:fetch"))
                        .header("Content-Type", "application/json")
                        .header(ALPHA[0], ALPHA[1])
                        .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                java.net.http.HttpResponse.BodyHandlers.ofByteArray());
    }

    /** Every tenant's bytes per tier equal the lengths of its namespaces' copies the engine holds there. */
    private void assertAccountsMatchTheEngine(String step) {
        TenantAccounts.assertMatchTheEngine(engine, namespaces, usage, step);
    }

    @Test
    void tenantBytesFollowTheEngineThroughEveryLifecyclePath() throws Exception {
        declare("acct-a", ALPHA, false);
        declare("acct-wt", ALPHA, true);
        declare("acct-b", BETA, false);
        var aHashes = TestLayout.hashes(TestLayout.tokens(12, 3100));
        var aBlocks = TestLayout.blocks(12, 3100);
        store("acct-a", ALPHA, aHashes, aBlocks);
        store("acct-wt", ALPHA, TestLayout.hashes(TestLayout.tokens(4, 3200)), TestLayout.blocks(4, 3200));
        store("acct-b", BETA, TestLayout.hashes(TestLayout.tokens(6, 3300)), TestLayout.blocks(6, 3300));
        assertAccountsMatchTheEngine("stored");

        var evicted = http().json("POST", "/admin/evict", "{\"tier\":\"DRAM\",\"namespace\":\"acct-a\"}", ADMIN);
        assertThat(evicted.body()).contains("\"evictedBlocks\":12");
        assertAccountsMatchTheEngine("demoted");

        // a hit in NVMe copies the blocks back up
        var fetched = fetch("{\"blockHashes\":" + Http.hexList(aHashes.subList(0, 4)) + "}");
        assertThat(fetched.statusCode()).isEqualTo(200);
        assertAccountsMatchTheEngine("promoted");

        // a corrupt NVMe copy dropped on read
        NvmeTier nvme = (NvmeTier) engine.tier(TierId.NVME);
        BlockKey bad = new BlockKey("acct-a", aHashes.get(8));
        try (FileChannel ch = FileChannel.open(nvme.fileOf(bad), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long at = nvme.offsetOf(bad) % nvme.fileSize() + 1000;
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, at);
            one.put(0, (byte) (one.get(0) ^ 0x5A)).rewind();
            ch.write(one, at);
            ch.force(true);
        }
        fetch("{\"blockHashes\":" + Http.hexList(aHashes.subList(8, 9)) + "}");
        assertAccountsMatchTheEngine("corrupt copy dropped");

        // the block file cut short under the service: the copies past the cut are unreadable and dropped on read
        BlockKey cutAt = new BlockKey("acct-a", aHashes.get(10));
        try (FileChannel ch = FileChannel.open(nvme.fileOf(cutAt), StandardOpenOption.WRITE)) {
            ch.truncate(nvme.offsetOf(cutAt) % nvme.fileSize());
        }
        long unreadableBefore = nvme.readFailures();
        fetch("{\"blockHashes\":" + Http.hexList(aHashes.subList(9, 12)) + "}");
        assertThat(nvme.readFailures()).isGreaterThan(unreadableBefore);
        assertAccountsMatchTheEngine("unreadable copies dropped");

        // out of the last tier
        http().json("POST", "/admin/evict", "{\"tier\":\"NVME\",\"blocks\":3}", ADMIN);
        assertAccountsMatchTheEngine("evicted from NVMe");

        assertThat(http().send(
                                "DELETE",
                                "/v1/namespaces/acct-a/blocks/" + aHashes.get(0).hex(),
                                null,
                                null,
                                ALPHA)
                        .statusCode())
                .isIn(204, 404);
        assertAccountsMatchTheEngine("block deleted");

        assertThat(http().send("DELETE", "/v1/namespaces/acct-wt", null, null, ALPHA)
                        .statusCode())
                .isEqualTo(200);
        assertAccountsMatchTheEngine("namespace deleted");
        declare("acct-wt", BETA, false);
        store("acct-wt", BETA, TestLayout.hashes(TestLayout.tokens(2, 3400)), TestLayout.blocks(2, 3400));
        assertAccountsMatchTheEngine("namespace declared again");
    }
}
