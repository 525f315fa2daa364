package io.kvstore.tier.nvme;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The NVMe tier's durable index in an embedded RocksDB: one entry per block (column family
 * {@code blocks}) and the tier's geometry (column family {@code tier}), so a restart finds every block
 * and refuses files laid out differently. An entry is written with a synced WAL only after the block's
 * bytes are durable; free space is not stored but derived from the entries on open, so the two can
 * never disagree after a crash.
 */
final class NvmeIndex implements AutoCloseable {

    static {
        RocksDB.loadLibrary();
    }

    /**
     * One block's place on disk and what it must read back as; {@code copy} numbers the copy while the tier is
     * open ({@link NvmeTier#copyOf}), is not stored, and is 0 as loaded.
     */
    record Entry(BlockRecord record, long offset, long slotSize, long createdMillis, long lastAccessMillis, long copy) {

        /** This entry, numbered as copy {@code n}. */
        Entry numbered(long n) {
            return new Entry(record, offset, slotSize, createdMillis, lastAccessMillis, n);
        }
    }

    private static final byte[] GEOMETRY = "geometry".getBytes(StandardCharsets.UTF_8);

    private final DBOptions options;
    private final RocksDB db;
    private final List<ColumnFamilyHandle> handles = new ArrayList<>();
    private final ColumnFamilyHandle blocks;
    private final ColumnFamilyHandle tier;
    private final WriteOptions synced = new WriteOptions().setSync(true);
    private final WriteOptions unsynced = new WriteOptions();

    NvmeIndex(Path dir) throws IOException {
        Files.createDirectories(dir);
        options = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true);
        List<ColumnFamilyDescriptor> families = List.of(
                new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY),
                new ColumnFamilyDescriptor("blocks".getBytes(StandardCharsets.UTF_8)),
                new ColumnFamilyDescriptor("tier".getBytes(StandardCharsets.UTF_8)));
        try {
            db = RocksDB.open(options, dir.toString(), families, handles);
        } catch (RocksDBException e) {
            options.close();
            throw new IOException("cannot open the NVMe index at " + dir + ": " + e.getMessage(), e);
        }
        blocks = handles.get(1);
        tier = handles.get(2);
    }

    /** Records the geometry on first open; on later opens checks it matches. */
    void checkGeometry(NvmeTierConfig config) throws IOException {
        String wanted = "capacity=" + config.capacityBytes() + ",file=" + config.fileSizeBytes() + ",slab="
                + config.slabSizeBytes() + ",dirs=" + config.paths().size();
        try {
            byte[] stored = db.get(tier, GEOMETRY);
            if (stored == null) {
                db.put(tier, synced, GEOMETRY, wanted.getBytes(StandardCharsets.UTF_8));
            } else if (!new String(stored, StandardCharsets.UTF_8).equals(wanted)) {
                throw new IOException("the NVMe tier at " + config.paths() + " was created with "
                        + new String(stored, StandardCharsets.UTF_8) + " but is now configured with " + wanted
                        + "; use the old settings or a new directory");
            }
        } catch (RocksDBException e) {
            throw new IOException("NVMe index geometry: " + e.getMessage(), e);
        }
    }

    /** Makes entries visible durably in one synced write (group commit). */
    void putAll(List<Entry> entries) throws IOException {
        try (WriteBatch batch = new WriteBatch()) {
            for (Entry e : entries) {
                batch.put(blocks, key(e.record().key()), value(e));
            }
            db.write(synced, batch);
        } catch (RocksDBException e) {
            throw new IOException("NVMe index write of " + entries.size() + " entries failed: " + e.getMessage(), e);
        }
    }

    /**
     * Removes an entry. Not synced: if it comes back after a crash, its slot may hold newer bytes, and
     * the CRC32C check on read drops it. A deletion that must not come back goes through {@link #forgetAll}
     * first.
     */
    void delete(BlockKey key) throws IOException {
        try {
            db.delete(blocks, unsynced, key(key));
        } catch (RocksDBException e) {
            throw new IOException("NVMe index delete of " + key + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Removes entries in one synced write: once this returns, no restart finds them, even after a crash. Their
     * slots are free space at the next open, as every slot no entry names.
     */
    void forgetAll(Collection<BlockKey> keys) throws IOException {
        try (WriteBatch batch = new WriteBatch()) {
            for (BlockKey key : keys) {
                batch.delete(blocks, key(key));
            }
            db.write(synced, batch);
        } catch (RocksDBException e) {
            throw new IOException("NVMe index delete of " + keys.size() + " entries failed: " + e.getMessage(), e);
        }
    }

    /** Stores last-access times (not synced: they only guide eviction). */
    void touchAll(Map<BlockKey, Entry> entries) throws IOException {
        try (WriteBatch batch = new WriteBatch()) {
            for (Entry e : entries.values()) {
                batch.put(blocks, key(e.record().key()), value(e));
            }
            db.write(unsynced, batch);
        } catch (RocksDBException e) {
            throw new IOException("NVMe index update failed: " + e.getMessage(), e);
        }
    }

    List<Entry> loadAll() {
        List<Entry> entries = new ArrayList<>();
        try (RocksIterator it = db.newIterator(blocks)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                entries.add(decode(it.key(), it.value()));
            }
        }
        return entries;
    }

    static byte[] key(BlockKey key) {
        byte[] ns = key.namespace().getBytes(StandardCharsets.UTF_8);
        byte[] hash = key.hash().toBytes();
        return ByteBuffer.allocate(2 + ns.length + hash.length)
                .putShort((short) ns.length)
                .put(ns)
                .put(hash)
                .array();
    }

    private static byte[] value(Entry e) {
        BlockRecord r = e.record();
        byte[] parent = r.parent() == null ? new byte[0] : r.parent().toBytes();
        return ByteBuffer.allocate(1 + parent.length + 8 + 8 + 4 + 4 + 8 + 8)
                .put((byte) parent.length)
                .put(parent)
                .putLong(e.offset())
                .putLong(e.slotSize())
                .putInt(r.length())
                .putInt(r.crc32c())
                .putLong(e.createdMillis())
                .putLong(e.lastAccessMillis())
                .array();
    }

    private static Entry decode(byte[] keyBytes, byte[] valueBytes) {
        ByteBuffer k = ByteBuffer.wrap(keyBytes);
        byte[] ns = new byte[k.getShort()];
        k.get(ns);
        byte[] hash = new byte[k.remaining()];
        k.get(hash);
        ByteBuffer v = ByteBuffer.wrap(valueBytes);
        byte[] parent = new byte[v.get()];
        v.get(parent);
        long offset = v.getLong();
        long slotSize = v.getLong();
        int length = v.getInt();
        int crc = v.getInt();
        long created = v.getLong();
        long lastAccess = v.getLong();
        BlockKey key = new BlockKey(new String(ns, StandardCharsets.UTF_8), BlockHash.of(hash));
        return new Entry(
                new BlockRecord(key, parent.length == 0 ? null : BlockHash.of(parent), length, crc),
                offset,
                slotSize,
                created,
                lastAccess,
                0);
    }

    @Override
    public void close() {
        synced.close();
        unsynced.close();
        for (ColumnFamilyHandle h : handles) {
            h.close();
        }
        db.close();
        options.close();
    }
}
