package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.TierId;
import io.kvstore.engine.BlockInfo;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierStats;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.quota.TenantUsage;
import io.kvstore.service.security.Caller;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/** The tenant tests' check that what kvstore books to each tenant and tier is what the engine holds. */
final class TenantAccounts {

    private TenantAccounts() {}

    /**
     * Once the moves under way ended: the bytes of alpha, beta and the local tenant per tier equal the lengths of
     * their namespaces' copies the engine holds there, and each tier's block and byte counts equal its copies.
     */
    static void assertMatchTheEngine(TierEngine engine, NamespaceRegistry namespaces, TenantUsage usage, String step) {
        engine.awaitMoves();
        Map<String, long[]> held = new HashMap<>();
        long[] tierBytes = new long[TierId.values().length];
        int[] tierBlocks = new int[TierId.values().length];
        for (Iterator<BlockInfo> it = engine.blocks(); it.hasNext(); ) {
            BlockInfo b = it.next();
            String owner = namespaces.owner(b.key().namespace());
            long[] bytes = held.computeIfAbsent(
                    owner == null ? Caller.LOCAL_TENANT : owner, t -> new long[TierId.values().length]);
            for (TierId t : b.tiers()) {
                bytes[t.ordinal()] += b.length();
                tierBytes[t.ordinal()] += b.length();
                tierBlocks[t.ordinal()]++;
            }
        }
        for (String tenant : List.of("alpha", "beta", Caller.LOCAL_TENANT)) {
            long[] bytes = held.getOrDefault(tenant, new long[TierId.values().length]);
            for (TierId t : List.of(TierId.DRAM, TierId.NVME)) {
                assertThat(usage.bytes(tenant, t))
                        .as(step + ": " + tenant + " in " + t)
                        .isEqualTo(bytes[t.ordinal()]);
            }
        }
        for (TierStats s : engine.stats()) {
            assertThat(s.blocks())
                    .as(step + ": blocks in " + s.tier())
                    .isEqualTo(tierBlocks[s.tier().ordinal()]);
            assertThat(s.usedBytes())
                    .as(step + ": bytes in " + s.tier())
                    .isEqualTo(tierBytes[s.tier().ordinal()]);
        }
    }
}
