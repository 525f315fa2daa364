package io.kvstore.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.util.List;
import org.junit.jupiter.api.Test;

class CatalogTest {

    private final Catalog catalog = new Catalog(() -> 1_000L);

    private BlockHash h(long v) {
        return BlockHash.ofLong(v);
    }

    private void resident(String ns, long v, TierId tier) {
        catalog.entryFor(new BlockKey(ns, h(v)), null, 4096, 0).addTier(tier);
    }

    @Test
    void lookupStopsAtFirstMissingBlock() {
        resident("m", 1, TierId.DRAM);
        resident("m", 2, TierId.NVME);
        resident("m", 4, TierId.DRAM);
        LookupResult result = catalog.lookup("m", List.of(h(1), h(2), h(3), h(4)));
        assertThat(result.matchedBlocks()).isEqualTo(2);
        assertThat(result.tiers()).containsExactly(TierId.DRAM, TierId.NVME);
    }

    @Test
    void lookupReportsTheFastestTierHoldingEachBlock() {
        CatalogEntry entry = catalog.entryFor(new BlockKey("m", h(1)), null, 4096, 0);
        entry.addTier(TierId.NVME);
        entry.addTier(TierId.HBM);
        assertThat(catalog.lookup("m", List.of(h(1))).tiers()).containsExactly(TierId.HBM);
    }

    @Test
    void blocksOfDifferentNamespacesNeverMeet() {
        resident("model-a", 1, TierId.DRAM);
        assertThat(catalog.lookup("model-b", List.of(h(1))).matchedBlocks()).isZero();
    }

    @Test
    void deadEntryIsReplacedOnNextStore() {
        BlockKey key = new BlockKey("m", h(9));
        CatalogEntry first = catalog.entryFor(key, null, 4096, 0);
        first.addTier(TierId.DRAM);
        first.dropAll();
        catalog.removeIfDead(first);
        assertThat(catalog.get(key)).isNull();
        CatalogEntry second = catalog.entryFor(key, null, 4096, 0);
        assertThat(second).isNotSameAs(first);
        assertThat(first.addTier(TierId.DRAM)).isFalse();
    }

    /**
     * A delete that lands while the first copy is being written must not let a new entry of the same key
     * in: the writer still has a copy in a tier that only it will free, and a new writer would take that
     * copy for its own (the race the engine stress test caught as a block listed in a tier that no longer
     * held it).
     */
    @Test
    void deletedEntryStaysUntilItsWriterGivesUp() {
        BlockKey key = new BlockKey("m", h(10));
        CatalogEntry first = catalog.entryFor(key, null, 4096, 0);
        assertThat(first.claimWrite()).isEqualTo(CatalogEntry.WriteClaim.OWNED);
        first.dropAll();
        catalog.removeIfDead(first);
        assertThat(catalog.get(key)).isSameAs(first);
        assertThat(first.publishWrite(TierId.DRAM)).isFalse();
        catalog.removeIfDead(first);
        assertThat(catalog.get(key)).isNull();
    }

    /** Likewise a mover or reader still holding the dead entry keeps it in place until it is done. */
    @Test
    void deadEntryStaysWhileAMoverHoldsIt() {
        BlockKey key = new BlockKey("m", h(11));
        CatalogEntry first = catalog.entryFor(key, null, 4096, 0);
        first.addTier(TierId.HBM);
        assertThat(first.claimMove(TierId.HBM)).isTrue();
        first.dropAll();
        catalog.removeIfDead(first);
        assertThat(catalog.get(key)).isSameAs(first);
        assertThat(first.finishMove(TierId.HBM, TierId.DRAM).recordedCopy()).isFalse();
        catalog.removeIfDead(first);
        assertThat(catalog.get(key)).isNull();
    }
}
