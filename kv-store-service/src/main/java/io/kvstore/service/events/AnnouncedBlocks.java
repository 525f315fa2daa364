package io.kvstore.service.events;

import java.util.HashMap;
import java.util.Map;

/**
 * What subscribers have been told of each block since the last {@code AllBlocksCleared}, while a
 * re-announcement is under way: flags per namespace and wire hash ({@link io.kvstore.block.BlockHash#lastLong},
 * all a router sees of a block). Publisher thread only.
 *
 * <p>Why a table of primitives: a re-announcement walks the whole catalog, and every block it announces must
 * stay findable until it ends (a block reached again as an ancestor, or by the catalog's iterator after its
 * child, goes out once). A {@code HashSet<BlockKey>} cost a node, a table slot and often a key object per block,
 * 40 to 70 bytes; here a block is a long and a byte in an open-addressing table with linear probing, grown by
 * doubling at three quarters full: 12 to 24 bytes per block (24 MB for a million blocks at worst), freed when
 * the re-announcement ends.
 */
final class AnnouncedBlocks {

    /** A {@code BlockStored} of the block went out (live or re-announced): its children may follow. */
    static final int KNOWN = 1;

    /** The re-announcement sent every copy the catalog held of the block. */
    static final int REANNOUNCED = 2;

    /** The block's parent is not in the catalog: neither it nor its descendants are re-announced. */
    static final int ORPHANED = 4;

    private final Map<String, Table> byNamespace = new HashMap<>();

    /** The flags of a block, 0 when nothing was recorded. */
    int flags(String namespace, long hash) {
        Table t = byNamespace.get(namespace);
        return t == null ? 0 : t.get(hash);
    }

    boolean has(String namespace, long hash, int flags) {
        return (flags(namespace, hash) & flags) != 0;
    }

    /** Adds {@code flags} to the block's. */
    void mark(String namespace, long hash, int flags) {
        byNamespace.computeIfAbsent(namespace, n -> new Table()).or(hash, flags);
    }

    /** Forgets the blocks of one namespace (deleted). */
    void forget(String namespace) {
        byNamespace.remove(namespace);
    }

    /** Forgets everything, giving the tables' memory back. */
    void clear() {
        byNamespace.clear();
    }

    /** Bytes the tables' arrays take. */
    long bytes() {
        long n = 0;
        for (Table t : byNamespace.values()) {
            n += 9L * t.keys.length;
        }
        return n;
    }

    /** Blocks recorded. */
    long size() {
        long n = 0;
        for (Table t : byNamespace.values()) {
            n += t.size + (t.zero != 0 ? 1 : 0);
        }
        return n;
    }

    /** Flags by wire hash; an empty slot is key 0, so hash 0 keeps its flags aside. */
    private static final class Table {
        private long[] keys = new long[16];
        private byte[] flags = new byte[16];
        private int size;
        private byte zero;

        int get(long hash) {
            if (hash == 0) {
                return zero;
            }
            int mask = keys.length - 1;
            for (int i = slot(hash, mask); ; i = (i + 1) & mask) {
                long k = keys[i];
                if (k == hash) {
                    return flags[i];
                }
                if (k == 0) {
                    return 0;
                }
            }
        }

        void or(long hash, int f) {
            if (hash == 0) {
                zero |= (byte) f;
                return;
            }
            int mask = keys.length - 1;
            int i = slot(hash, mask);
            while (keys[i] != 0 && keys[i] != hash) {
                i = (i + 1) & mask;
            }
            if (keys[i] == 0) {
                keys[i] = hash;
                if (++size > keys.length / 4 * 3) {
                    flags[i] |= (byte) f;
                    grow();
                    return;
                }
            }
            flags[i] |= (byte) f;
        }

        private void grow() {
            long[] oldKeys = keys;
            byte[] oldFlags = flags;
            keys = new long[oldKeys.length * 2];
            flags = new byte[oldKeys.length * 2];
            int mask = keys.length - 1;
            for (int j = 0; j < oldKeys.length; j++) {
                long k = oldKeys[j];
                if (k != 0) {
                    int i = slot(k, mask);
                    while (keys[i] != 0) {
                        i = (i + 1) & mask;
                    }
                    keys[i] = k;
                    flags[i] = oldFlags[j];
                }
            }
        }

        /** The hash's home slot: wire hashes are hashes already, but a multiply spreads any regularity. */
        private static int slot(long hash, int mask) {
            return (int) ((hash * 0x9E3779B97F4A7C15L) >>> 32) & mask;
        }
    }
}
