package io.kvstore.catalog;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.concurrent.SpinWait;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Every block kvstore holds, by key. A lookup walks a prompt's chained keys and stops at the first
 * that no tier holds: because each key covers its whole prefix, the blocks before it are exactly the
 * cached prefix. Time is linear in the matched length; no lock is taken beyond each entry's own.
 */
public final class Catalog {

    private final ConcurrentHashMap<BlockKey, CatalogEntry> entries = new ConcurrentHashMap<>();
    private final LongSupplier clockMillis;

    public Catalog(LongSupplier clockMillis) {
        this.clockMillis = clockMillis;
    }

    public @Nullable CatalogEntry get(BlockKey key) {
        return entries.get(key);
    }

    /**
     * The live entry for a key, creating it (with no tier yet) when absent. A dead entry is still being
     * cleaned up (its slots freed); a new one is made only after it has left the map, so a new copy of
     * the block can never be confused with the old copy's slot that is about to be freed.
     */
    public CatalogEntry entryFor(BlockKey key, @Nullable BlockHash parent, int length, int crc32c) {
        SpinWait wait = null;
        while (true) {
            // get, then putIfAbsent: a new block costs one CAS of its map node, where computeIfAbsent
            // allocated a capturing lambda and a reservation node per call (garbage on every store); an
            // entry made by a thread that loses the race is simply dropped (its constructor does nothing else)
            CatalogEntry entry = entries.get(key);
            if (entry == null) {
                CatalogEntry fresh = new CatalogEntry(key, parent, length, crc32c, clockMillis.getAsLong());
                CatalogEntry raced = entries.putIfAbsent(key, fresh);
                entry = raced == null ? fresh : raced;
            }
            if (!entry.dead()) {
                return entry;
            }
            if (wait == null) {
                wait = SpinWait.upTo(SpinWait.DEFAULT_NANOS);
            }
            wait.pause(() -> "block " + key + " is still being removed after 30 s");
        }
    }

    /**
     * Removes the entry if it is still the one mapped, has no copy left and nobody is still writing,
     * moving or reading it (see {@link CatalogEntry#dieIfEmpty}); whoever finishes last calls this again.
     */
    public void removeIfDead(CatalogEntry entry) {
        if (entry.dieIfEmpty()) {
            entries.remove(entry.key(), entry);
        }
    }

    /**
     * The longest resident prefix of {@code hashes} in {@code namespace}; every matched block counts as
     * accessed.
     */
    public LookupResult lookup(String namespace, List<BlockHash> hashes) {
        List<BlockKey> keys = new ArrayList<>();
        List<TierId> tiers = new ArrayList<>();
        long now = clockMillis.getAsLong();
        for (BlockHash hash : hashes) {
            BlockKey key = new BlockKey(namespace, hash);
            CatalogEntry entry = entries.get(key);
            TierId tier = entry == null ? null : entry.fastestTier();
            if (entry == null || tier == null) {
                break;
            }
            entry.touch(now);
            keys.add(key);
            tiers.add(tier);
        }
        return new LookupResult(keys, tiers);
    }

    public void touch(CatalogEntry entry) {
        entry.touch(clockMillis.getAsLong());
    }

    public int size() {
        return entries.size();
    }

    public Collection<CatalogEntry> entries() {
        return entries.values();
    }
}
