package io.kvstore.tier.nvme;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.concurrent.IntervalLog;
import io.kvstore.ffm.UseCount;
import io.kvstore.ffm.libc.LibC;
import io.kvstore.ffm.libc.PosixException;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierClosedException;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.UnreadableCopyException;
import io.kvstore.tier.memory.SlabAllocator;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NVMe tier (G3): blocks in 4 KiB-aligned slots of preallocated files, written and read with
 * O_DIRECT, indexed in RocksDB, and back after a restart or a crash byte-exact or not at all.
 *
 * <p>Durability order of a store: the bytes are written, the file is fdatasync'ed, the index entry is
 * written with a synced WAL, and only then does the block enter the tier's map (and so the engine's
 * catalog). A crash before the index write leaves a slot that no entry names, which is free again on
 * the next open; a crash after it leaves a complete, durable block. Batches share one fdatasync per
 * file and one synced index write (group commit), with the writes in flight together on the I/O
 * threads when the source memory is shared (memory confined to one thread is written by that thread).
 * Every read is checked against the CRC32C taken at
 * store time; a block that fails is dropped and counted.
 *
 * <p>A filesystem that runs out of space below the configured capacity shrinks the usable capacity
 * ({@link DiskSpace}): the write fails as {@link TierFullException}, so the engine evicts this tier's own
 * victims and retries, and the capacity grows back when the filesystem has room again.
 *
 * <p>Blocks can also come straight from the device (HBM) tier's memory and go straight back to it
 * ({@link #writeAllFromDevice}, {@link #readToDevice}) through a {@link DeviceFileCopier} (GPUDirect
 * Storage): the same slots, files, durability order and index, so recovery and crashes treat them alike.
 *
 * <p>Every call that touches the files or the index is a use of the tier ({@link UseCount}): once {@link #close}
 * began, a call fails with {@link TierClosedException} ("NVMe tier closed"), and close frees RocksDB and the
 * file descriptors only after the calls under way have returned, so a call racing shutdown never hands RocksDB a
 * destroyed handle (a crash of the whole process) or reads a descriptor number the process may reuse.
 *
 * <p>Why it is long: recovery, the group-committed write with its rollback of slots (from host memory or
 * from the device), and the verified read share one map, index and allocator, and the order between them
 * is the durability argument above; what stands alone is already its own class ({@link BlockFiles},
 * {@link NvmeIndex}, {@link DiskSpace}).
 */
public final class NvmeTier implements BlockTier {

    private static final Logger log = LoggerFactory.getLogger(NvmeTier.class);
    private static final long ALIGN = SlabAllocator.SLOT_ALIGNMENT;

    private final NvmeTierConfig config;
    private final BlockFiles files;
    private final NvmeIndex index;
    private final SlabAllocator slabs;
    private final ExecutorService io;
    private final ConcurrentHashMap<BlockKey, NvmeIndex.Entry> blocks = new ConcurrentHashMap<>();
    /** The last copy number handed out ({@link #copyOf}): each entry put into {@link #blocks} takes the next. */
    private final AtomicLong copies = new AtomicLong(NO_COPY);

    private final List<BlockRecord> recovered;
    private final LongAdder checksumFailures = new LongAdder();
    private final LongAdder readFailures = new LongAdder();
    /** At most one unreadable-copy line a minute. */
    private final IntervalLog readFailureLines = new IntervalLog(Duration.ofMinutes(1));

    private final LongAdder groupCommits = new LongAdder();
    private final DiskSpace space;
    /** The calls under way that use the files or the index; {@link #close} waits for them. */
    private final UseCount uses = new UseCount();

    /** Opens (or creates) the tier, rebuilding its map and free space from the index. */
    public NvmeTier(NvmeTierConfig config) throws IOException {
        long start = System.nanoTime();
        this.config = config;
        this.slabs = new SlabAllocator(config.capacityBytes(), config.slabSizeBytes());
        this.index = new NvmeIndex(config.indexDir());
        try {
            index.checkGeometry(config);
            this.files = new BlockFiles(config);
            this.space = new DiskSpace(config, files, slabs);
        } catch (IOException | RuntimeException e) {
            index.close();
            throw e;
        }
        this.io = Executors.newFixedThreadPool(
                config.ioThreads(),
                Thread.ofPlatform().name("kvstore-nvme-io-", 0).daemon().factory());
        List<BlockRecord> found = new ArrayList<>();
        long bytes = 0;
        java.util.SortedMap<Integer, Integer> cutShort = new java.util.TreeMap<>(); // file -> entries dropped
        for (NvmeIndex.Entry loaded : index.loadAll()) {
            NvmeIndex.Entry entry = loaded.numbered(copies.incrementAndGet());
            if (!files.heldAtOpen(entry.offset(), entry.slotSize())) {
                cutShort.merge(files.fileOf(entry.offset()), 1, Integer::sum);
                index.delete(entry.record().key());
                continue;
            }
            try {
                slabs.claim(entry.offset(), entry.slotSize());
            } catch (IllegalStateException | IllegalArgumentException conflict) {
                log.warn(
                        "NVMe index entry {} names slot {} that is invalid or taken ({}); dropping it",
                        entry.record().key(),
                        entry.offset(),
                        conflict.getMessage());
                index.delete(entry.record().key());
                continue;
            }
            blocks.put(entry.record().key(), entry);
            found.add(entry.record());
            bytes += entry.record().length();
        }
        if (!cutShort.isEmpty()) {
            log.warn(
                    "NVMe block files cut short or missing since the last run (file -> index entries past its end, "
                            + "dropped): {}",
                    cutShort);
        }
        this.recovered = List.copyOf(found);
        log.info(
                "NVMe tier at {}: {} blocks ({} MiB) recovered in {} ms, {} of {} MiB free, {} I/O",
                config.paths(),
                found.size(),
                bytes >> 20,
                (System.nanoTime() - start) / 1_000_000,
                (slabs.capacityBytes() - slabs.usedBytes()) >> 20,
                slabs.capacityBytes() >> 20,
                files.direct() ? "O_DIRECT" : "buffered");
    }

    @Override
    public TierId id() {
        return TierId.NVME;
    }

    @Override
    public String provider() {
        return files.direct() ? "file(O_DIRECT)" : "file(buffered)";
    }

    @Override
    public long capacityBytes() {
        return slabs.capacityBytes();
    }

    @Override
    public long usableBytes() {
        return slabs.usableBytes();
    }

    @Override
    public @Nullable String shortage() {
        return space.shortage();
    }

    @Override
    public long outOfSpaceErrors() {
        return space.errors();
    }

    @Override
    public long usedBytes() {
        return slabs.usedBytes();
    }

    @Override
    public int blockCount() {
        return blocks.size();
    }

    @Override
    public boolean contains(BlockKey key) {
        return blocks.containsKey(key);
    }

    @Override
    public List<BlockRecord> recovered() {
        return recovered;
    }

    /** Synced index writes since the tier opened; each made a whole batch of blocks visible. */
    public long groupCommits() {
        return groupCommits.sum();
    }

    /** Copies dropped since the tier opened because the device could not read them back. */
    public long readFailures() {
        return readFailures.sum();
    }

    /** Reads that failed their checksum since the tier opened. */
    public long checksumFailures() {
        return checksumFailures.sum();
    }

    @Override
    public void write(BlockRecord record, MemorySegment src) throws IOException {
        writeAll(List.of(record), List.of(src));
    }

    @Override
    public boolean batchesWrites() {
        return true;
    }

    /**
     * Stores a batch with every write in flight at once, then one fdatasync per file and one synced
     * index write. All or nothing: on any failure no block of the batch becomes visible and every slot
     * it took is free again. Keys the tier already holds are skipped.
     */
    @Override
    public void writeAll(List<BlockRecord> records, List<MemorySegment> sources) throws IOException {
        if (records.size() != sources.size()) {
            throw new IllegalArgumentException(records.size() + " records but " + sources.size() + " sources");
        }
        for (int i = 0; i < records.size(); i++) {
            if (sources.get(i).byteSize() != records.get(i).length()) {
                throw new IllegalArgumentException("block " + records.get(i).key() + " is "
                        + sources.get(i).byteSize() + " bytes but its record says "
                        + records.get(i).length());
            }
        }
        enter();
        try {
            commit(records, shareable(sources), (e, i) -> writeSlot(e, sources.get(i)), false);
        } finally {
            uses.exit();
        }
    }

    /**
     * Stores a batch straight from the device tier's memory: block {@code i} lies at {@code
     * deviceOffsets.get(i)} of the device region, in a slot of the same size as this tier's, and {@code
     * copier} moves each whole slot into its block file (GPUDirect Storage), never through host memory.
     * The same slots, files, durability order and index as {@link #writeAll}, so a restart or a crash
     * treats these blocks like any other. Each entry keeps the CRC32C its record carries (taken in host
     * memory when the block entered the device); with {@code readBack} every slot is also read back into
     * host memory after the sync and checked against it before the index names it, so a block damaged on
     * the device or on the way is refused here ({@link ChecksumMismatchException}) rather than on its
     * first read.
     */
    public void writeAllFromDevice(
            List<BlockRecord> records, List<Long> deviceOffsets, DeviceFileCopier copier, boolean readBack)
            throws IOException {
        if (records.size() != deviceOffsets.size()) {
            throw new IllegalArgumentException(
                    records.size() + " records but " + deviceOffsets.size() + " device offsets");
        }
        enter();
        try {
            commit(
                    records,
                    true,
                    (e, i) -> copier.write(deviceOffsets.get(i), files.fileAt(e.offset()), fileOffset(e), e.slotSize()),
                    readBack);
        } finally {
            uses.exit();
        }
    }

    /** Writes block {@code i} of a batch into the slot {@code e} names. */
    @FunctionalInterface
    private interface SlotWrite {
        void write(NvmeIndex.Entry e, int i) throws IOException;
    }

    /** The group commit behind both writes: slots, every write, one sync per file, one index write. */
    private void commit(List<BlockRecord> records, boolean parallel, SlotWrite write, boolean readBack)
            throws IOException {
        List<NvmeIndex.Entry> entries = new ArrayList<>(records.size());
        List<Integer> indices = new ArrayList<>(records.size());
        try {
            for (int i = 0; i < records.size(); i++) {
                BlockRecord r = records.get(i);
                if (blocks.containsKey(r.key())) {
                    continue;
                }
                long slotSize = SlabAllocator.slotSizeFor(r.length());
                long offset = slabs.allocate(slotSize);
                if (offset < 0 && space.maybeRegrow()) {
                    offset = slabs.allocate(slotSize);
                }
                if (offset < 0) {
                    throw new TierFullException("NVMe tier has no free slot of " + slotSize + " bytes ("
                            + slabs.usedBytes() + " of " + slabs.usableBytes() + " usable bytes used, "
                            + slabs.capacityBytes() + " configured)");
                }
                long now = System.currentTimeMillis();
                entries.add(new NvmeIndex.Entry(r, offset, slotSize, now, now, copies.incrementAndGet()));
                indices.add(i);
            }
            if (entries.isEmpty()) {
                return;
            }
            if (entries.size() == 1 || !parallel) {
                // one block, or memory confined to the caller's thread: write here
                for (int j = 0; j < entries.size(); j++) {
                    write.write(entries.get(j), indices.get(j));
                }
            } else {
                List<Future<?>> writes = new ArrayList<>(entries.size());
                for (int j = 0; j < entries.size(); j++) {
                    NvmeIndex.Entry e = entries.get(j);
                    int i = indices.get(j);
                    writes.add(io.submit(() -> {
                        write.write(e, i);
                        return null;
                    }));
                }
                awaitAll(writes);
            }
            Set<Integer> synced = new TreeSet<>();
            for (NvmeIndex.Entry e : entries) {
                if (synced.add(files.fileOf(e.offset()))) {
                    files.sync(e.offset());
                }
            }
            if (readBack) {
                checkWritten(entries);
            }
            index.putAll(entries);
            groupCommits.increment();
        } catch (IOException | RuntimeException e) {
            List<Long> offsets = new ArrayList<>(entries.size());
            for (NvmeIndex.Entry entry : entries) {
                slabs.free(entry.offset(), entry.slotSize());
                offsets.add(entry.offset());
            }
            PosixException noSpace = DiskSpace.outOfSpace(e);
            if (noSpace != null) {
                throw space.shrink(noSpace, offsets);
            }
            throw e;
        }
        for (NvmeIndex.Entry e : entries) {
            NvmeIndex.Entry existing = blocks.putIfAbsent(e.record().key(), e);
            if (existing != null) {
                // a concurrent store of the same key won; point the index back at its slot
                index.putAll(List.of(existing));
                slabs.free(e.offset(), e.slotSize());
            }
        }
    }

    /** Reads each written slot back into host memory and checks its CRC32C before the index may name it. */
    private void checkWritten(List<NvmeIndex.Entry> entries) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            for (NvmeIndex.Entry e : entries) {
                MemorySegment buffer = arena.allocate(e.slotSize(), ALIGN);
                files.read(e.offset(), buffer);
                if (Checksums.crc32c(buffer.asSlice(0, e.record().length()))
                        != e.record().crc32c()) {
                    checksumFailures.increment();
                    throw new ChecksumMismatchException("block " + e.record().key()
                            + " written to the NVMe tier from the device fails its CRC32C on read-back; not stored");
                }
            }
        }
    }

    /**
     * Copies a block's whole slot straight into the device region at {@code deviceOffset} (a slot of the
     * same size) through {@code copier}. The bytes are not checked here, the CPU never sees them: the
     * caller checks them on the device side and calls {@link #dropCorrupt} when they fail.
     */
    public BlockRecord readToDevice(BlockKey key, long deviceOffset, DeviceFileCopier copier) throws IOException {
        enter();
        try {
            NvmeIndex.Entry e = blocks.get(key);
            if (e == null) {
                throw new BlockNotFoundException("NVMe tier does not hold block " + key);
            }
            copier.read(files.fileAt(e.offset()), fileOffset(e), deviceOffset, e.slotSize());
            return e.record();
        } finally {
            uses.exit();
        }
    }

    /** Drops a block whose bytes failed their checksum after {@link #readToDevice}, and counts it. */
    public void dropCorrupt(BlockKey key) {
        enter();
        try {
            NvmeIndex.Entry e = blocks.get(key);
            if (e == null) {
                return;
            }
            dropFailed(key, e);
        } catch (IOException ex) {
            // the entry may come back after a restart; its slot is then re-checked by CRC on read
            log.warn("could not remove {} from the NVMe index: {}", key, ex.getMessage());
        } finally {
            uses.exit();
        }
    }

    private long fileOffset(NvmeIndex.Entry e) {
        return e.offset() % config.fileSizeBytes();
    }

    private void writeSlot(NvmeIndex.Entry e, MemorySegment src) throws IOException {
        int length = e.record().length();
        if (aligned(src) && length == e.slotSize()) {
            files.write(e.offset(), src);
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(e.slotSize(), ALIGN);
            MemorySegment.copy(src, 0, buffer, 0, length);
            files.write(e.offset(), buffer);
        }
    }

    @Override
    public BlockRecord read(BlockKey key, MemorySegment dst) throws IOException {
        enter();
        try {
            return readEntry(key, dst);
        } finally {
            uses.exit();
        }
    }

    /** {@link #read} within a use the caller holds. */
    private BlockRecord readEntry(BlockKey key, MemorySegment dst) throws IOException {
        NvmeIndex.Entry e = blocks.get(key);
        if (e == null) {
            throw new BlockNotFoundException("NVMe tier does not hold block " + key);
        }
        int length = e.record().length();
        if (dst.byteSize() < length) {
            throw new IllegalArgumentException(
                    "buffer of " + dst.byteSize() + " bytes is too small for block " + key + " of " + length);
        }
        MemorySegment target = dst.asSlice(0, length);
        try {
            if (aligned(dst) && dst.byteSize() >= e.slotSize()) {
                files.read(e.offset(), dst.asSlice(0, e.slotSize()));
            } else {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment buffer = arena.allocate(e.slotSize(), ALIGN);
                    files.read(e.offset(), buffer);
                    MemorySegment.copy(buffer, 0, target, 0, length);
                }
            }
        } catch (PosixException failed) {
            if (!bytesLost(failed)) {
                throw failed; // not the copy's fault (a file closed at shutdown): it stays
            }
            dropUnreadable(key, e, failed);
            throw new UnreadableCopyException(
                    "block " + key + " in tier NVME could not be read (" + failed.getMessage()
                            + "); that copy is dropped",
                    failed);
        }
        if (Checksums.crc32c(target) != e.record().crc32c()) {
            dropFailed(key, e);
            throw new ChecksumMismatchException("block " + key + " in tier NVME fails its CRC32C");
        }
        return e.record();
    }

    /**
     * Whether a failed read says the slot's bytes are gone: the device failed it (EIO), or the file ends
     * before the slot (cut short under the running service). Other errors say nothing about the copy.
     */
    private static boolean bytesLost(PosixException e) {
        return e.errno() == LibC.EIO || e.errno() == 0;
    }

    /**
     * Drops a copy the device could not read back. Logged once a minute at most, with the count since the
     * last line: a failing drive fails every read, and a line per block would bury the log.
     */
    private void dropUnreadable(BlockKey key, NvmeIndex.Entry e, PosixException why) {
        readFailures.increment();
        try {
            forgetLost(key, e);
        } catch (IOException indexFailed) {
            // the slot stays taken (the index may still name it); a restart re-checks it by CRC on read
            log.debug("could not remove unreadable {} from the NVMe index: {}", key, indexFailed.getMessage());
        }
        if (readFailureLines.occurred() >= 0) {
            long total = readFailures.sum();
            log.warn(
                    "NVMe tier could not read block {} ({}); the copy is dropped ({} unreadable copies dropped since the"
                            + " tier opened; at most one such line a minute)",
                    key,
                    why.getMessage(),
                    total);
        }
    }

    private void dropFailed(BlockKey key, NvmeIndex.Entry e) throws IOException {
        checksumFailures.increment();
        forgetLost(key, e);
        log.warn(
                "block {} failed its checksum in the NVMe tier ({} at offset {}); dropped",
                key,
                files.pathOf(e.offset()),
                fileOffset(e));
    }

    /**
     * Removes a copy whose bytes are lost from the map and the index ({@link #unmap}), then its slot: the slot is
     * freed only once the index no longer names it (an index that fails keeps the slot taken).
     */
    private void forgetLost(BlockKey key, NvmeIndex.Entry e) throws IOException {
        if (unmap(key, e)) {
            slabs.free(e.offset(), e.slotSize());
        }
    }

    /**
     * Takes copy {@code e} out of the map and its index entry out of the index in one step, under the map's lock of
     * the key: the index entry is removed by key, and it is this copy's only while the map holds this copy (a new
     * copy of the key is written only once the map holds none). False, touching nothing, when the map holds another
     * copy of the key or none.
     *
     * @throws IOException when the index delete failed; the copy left the map all the same
     */
    private boolean unmap(BlockKey key, NvmeIndex.Entry e) throws IOException {
        boolean[] removed = {false};
        IOException[] failed = new IOException[1];
        blocks.computeIfPresent(key, (k, held) -> {
            if (held.copy() != e.copy()) {
                return held;
            }
            try {
                index.delete(k);
            } catch (IOException ex) {
                failed[0] = ex;
            }
            removed[0] = true;
            return null;
        });
        if (failed[0] != null) {
            throw failed[0];
        }
        return removed[0];
    }

    /** Reads a batch with every read in flight at once; each result is checked like {@link #read}. */
    public void readAll(List<BlockKey> keys, List<MemorySegment> destinations) throws IOException {
        enter();
        try {
            if (!shareable(destinations)) {
                for (int i = 0; i < keys.size(); i++) {
                    readEntry(keys.get(i), destinations.get(i));
                }
                return;
            }
            List<Future<?>> reads = new ArrayList<>(keys.size());
            for (int i = 0; i < keys.size(); i++) {
                BlockKey key = keys.get(i);
                MemorySegment dst = destinations.get(i);
                reads.add(io.submit(() -> readEntry(key, dst))); // within this call's use, which awaits them
            }
            awaitAll(reads);
        } finally {
            uses.exit();
        }
    }

    /** The slot's offset within the tier's linear file space (for tests and diagnostics), or -1. */
    public long offsetOf(BlockKey key) {
        NvmeIndex.Entry e = blocks.get(key);
        return e == null ? -1 : e.offset();
    }

    /** The block file holding a block (for tests and diagnostics), or null. */
    public java.nio.file.Path fileOf(BlockKey key) {
        NvmeIndex.Entry e = blocks.get(key);
        return e == null ? null : java.nio.file.Path.of(files.pathOf(e.offset()));
    }

    public long fileSize() {
        return config.fileSizeBytes();
    }

    @Override
    public boolean delete(BlockKey key) {
        enter();
        try {
            NvmeIndex.Entry e = blocks.get(key);
            return e != null && free(key, e);
        } finally {
            uses.exit();
        }
    }

    /**
     * The copy's number, taken when it entered the map: a copy this tier dropped itself (it could not be read
     * back) and a copy of the key written after it have different numbers.
     */
    @Override
    public long copyOf(BlockKey key) {
        NvmeIndex.Entry e = blocks.get(key);
        return e == null ? NO_COPY : e.copy();
    }

    @Override
    public boolean delete(BlockKey key, long copy) {
        enter();
        try {
            NvmeIndex.Entry e = blocks.get(key);
            return e != null && e.copy() == copy && free(key, e);
        } finally {
            uses.exit();
        }
    }

    /**
     * Removes {@code e} from the map and the index ({@link #unmap}), then frees its slot; false when the map no
     * longer holds it (dropped meanwhile by a read that found it bad, which freed the slot; a copy written after
     * that keeps its index entry).
     */
    private boolean free(BlockKey key, NvmeIndex.Entry e) {
        try {
            if (!unmap(key, e)) {
                return false;
            }
        } catch (IOException ex) {
            // the entry may come back after a restart; its slot is then re-checked by CRC on read
            log.warn("could not remove {} from the NVMe index: {}", key, ex.getMessage());
        }
        slabs.free(e.offset(), e.slotSize());
        return true;
    }

    /**
     * Removes the index entries of these blocks in one synced write, so no restart brings them back, while their
     * map entries and slots stay: a reader of a deleted block still reads its bytes, and nothing new is written
     * under the key, until {@link #delete} frees the slot. A crash before that leaves a slot no entry names, which
     * is free at the next open.
     */
    @Override
    public void forgetAtRestart(Collection<BlockKey> keys) {
        List<BlockKey> held = new ArrayList<>(keys.size());
        for (BlockKey key : keys) {
            if (blocks.containsKey(key)) {
                held.add(key);
            }
        }
        if (held.isEmpty()) {
            return;
        }
        enter();
        try {
            index.forgetAll(held);
        } catch (IOException ex) {
            // the deletions are then only as durable as the unsynced index deletes that free their slots
            log.warn("could not remove {} deleted blocks from the NVMe index: {}", held.size(), ex.getMessage());
        } finally {
            uses.exit();
        }
    }

    /**
     * Begins a use of the files and the index; end it with {@code uses.exit()}.
     *
     * @throws TierClosedException once {@link #close} began
     */
    private void enter() {
        if (!uses.tryEnter()) {
            throw new TierClosedException("NVMe");
        }
    }

    /** A thread that never runs: a segment accessible by it is accessible by every thread. */
    private static final Thread ANY_THREAD = Thread.ofPlatform().unstarted(() -> {});

    private static boolean shareable(List<MemorySegment> segments) {
        for (MemorySegment s : segments) {
            if (!s.isAccessibleBy(ANY_THREAD)) {
                return false;
            }
        }
        return true;
    }

    private static boolean aligned(MemorySegment segment) {
        return segment.address() % ALIGN == 0;
    }

    private static void awaitAll(List<Future<?>> futures) throws IOException {
        IOException first = null;
        for (Future<?> f : futures) {
            try {
                f.get();
            } catch (ExecutionException e) {
                if (first == null) {
                    first = e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while waiting for NVMe I/O", e);
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /**
     * Refuses new calls, waits for those under way (a batch with its I/O threads' writes or reads), then closes the
     * files and the index. A second call returns once the first has waited.
     */
    @Override
    public void close() {
        if (!uses.closeAndAwait()) {
            return;
        }
        io.shutdown();
        try {
            io.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        files.close();
        index.close();
    }
}
