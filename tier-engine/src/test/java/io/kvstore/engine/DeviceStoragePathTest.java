package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.device.EmulatedDeviceCopier;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.DeviceFileCopier;
import io.kvstore.tier.nvme.NvmeTier;
import io.kvstore.tier.nvme.NvmeTierConfig;
import io.kvstore.tier.nvme.StandInDeviceFileCopier;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The engine's direct HBM to NVMe path (GPUDirect Storage) on CPU: the HBM tier is a {@link DeviceTier}
 * over {@link EmulatedDeviceCopier} (host memory standing in for a GPU) and the device-to-file copies are
 * made by {@link StandInDeviceFileCopier} (pwrite/pread standing in for cuFile), both labelled as such;
 * everything else (routing past DRAM, slots, group commit, index, checksums, recovery) is the real code.
 * cuFile and NIXL GDS themselves are tested on a GPU machine ({@code CuFileDeviceFileCopierTest}).
 */
class DeviceStoragePathTest {

    static final int BLOCK = 60_000; // not a multiple of 4 KiB: the slot's tail travels too and is ignored

    @TempDir
    Path dir;

    private final Arena arena = Arena.ofShared();
    private final Map<String, AtomicInteger> events = new ConcurrentHashMap<>();
    private StandInDeviceFileCopier copier;

    @AfterEach
    void closeArena() {
        arena.close();
    }

    private final EngineEvents counting = new EngineEvents() {
        @Override
        public void demoted(TierId from, TierId to, int bytes) {
            count("demoted " + from + "->" + to);
        }

        @Override
        public void promoted(TierId from, TierId to, int bytes) {
            count("promoted " + from + "->" + to);
        }

        @Override
        public void checksumFailed(TierId tier, BlockKey key) {
            count("checksum " + tier);
        }
    };

    private void count(String what) {
        events.computeIfAbsent(what, k -> new AtomicInteger()).incrementAndGet();
    }

    private int events(String what) {
        AtomicInteger n = events.get(what);
        return n == null ? 0 : n.get();
    }

    static NvmeTierConfig nvmeConfig(Path dir) {
        return new NvmeTierConfig(List.of(dir), 64 << 20, 4 << 20, 1 << 20, 4);
    }

    /** HBM (8 blocks, emulated device) over DRAM over NVMe, HBM and NVMe joined by the stand-in copier. */
    static TierEngine open(Path dir, boolean readBack, EngineEvents events, StandInDeviceFileCopier[] copierOut)
            throws Exception {
        return open(dir, readBack, events, copierOut, standIn -> standIn);
    }

    /** As above, HBM and NVMe joined by what {@code drive} makes of the stand-in copier. */
    static TierEngine open(
            Path dir,
            boolean readBack,
            EngineEvents events,
            StandInDeviceFileCopier[] copierOut,
            Function<StandInDeviceFileCopier, DeviceFileCopier> drive)
            throws Exception {
        DeviceTier hbm = new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(8L * 65536), 4L * 65536);
        List<BlockTier> tiers = List.of(
                hbm,
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 16L * 65536, 4L * 65536),
                new NvmeTier(nvmeConfig(dir)));
        Map<TierId, TierSettings> settings = new EnumMap<>(TierId.class);
        settings.put(TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, true));
        settings.put(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, true));
        StandInDeviceFileCopier copier = new StandInDeviceFileCopier(hbm.region());
        copierOut[0] = copier;
        return new TierEngine(
                tiers, settings, Duration.ofMinutes(2), events, Clock.systemUTC(), drive.apply(copier), readBack);
    }

    private TierEngine open(boolean readBack) throws Exception {
        StandInDeviceFileCopier[] out = new StandInDeviceFileCopier[1];
        TierEngine engine = open(dir, readBack, counting, out);
        copier = out[0];
        return engine;
    }

    private List<BlockKey> putChain(TierEngine engine, int count) throws Exception {
        return putChain(engine, arena, "m", 1, count);
    }

    private void assertReadsBack(TierEngine engine, BlockKey key, long id) throws Exception {
        assertReadsBack(engine, arena, key, id);
    }

    /** Stores blocks {@code first} to {@code first + count - 1} of {@code namespace} as one chain; waits for moves. */
    static List<BlockKey> putChain(TierEngine engine, Arena arena, String namespace, long first, int count)
            throws Exception {
        List<BlockKey> keys = new ArrayList<>();
        BlockHash parent = null;
        for (long id = first; id < first + count; id++) {
            BlockKey key = TestBlocks.key(namespace, id);
            engine.put(key, parent, TestBlocks.bytes(arena, id, BLOCK));
            keys.add(key);
            parent = key.hash();
        }
        engine.awaitMoves();
        return keys;
    }

    /** Reads {@code key} through the engine and checks it holds block {@code id}'s bytes. */
    static void assertReadsBack(TierEngine engine, Arena arena, BlockKey key, long id) throws Exception {
        MemorySegment dst = arena.allocate(BLOCK);
        engine.get(key, dst);
        assertThat(dst.mismatch(TestBlocks.bytes(arena, id, BLOCK)))
                .as("block %d", id)
                .isEqualTo(-1);
    }

    @Test
    void hbmDemotesStraightToNvmeAndNvmeHitsPromoteStraightBackByteExact() throws Exception {
        try (TierEngine engine = open(false)) {
            assertThat(engine.deviceStorageRoute()).contains("stand-in, not GPUDirect Storage");
            List<BlockKey> keys = putChain(engine, 24);
            NvmeTier nvme = (NvmeTier) engine.tier(TierId.NVME);
            assertThat(engine.tier(TierId.DRAM).blockCount())
                    .as("DRAM is skipped")
                    .isZero();
            assertThat(events("demoted HBM->DRAM")).isZero();
            assertThat(events("demoted HBM->NVME")).isGreaterThanOrEqualTo(16);
            assertThat(nvme.blockCount()).isGreaterThanOrEqualTo(16);
            assertThat(copier.writes())
                    .as("every NVMe block came from the device copier")
                    .isEqualTo(nvme.blockCount());
            assertThat(engine.lookup("m", keys.stream().map(BlockKey::hash).toList())
                            .matchedBlocks())
                    .isEqualTo(24);

            BlockKey first = keys.getFirst();
            assertThat(engine.info(first).tiers()).containsExactly(TierId.NVME);
            assertReadsBack(engine, first, 1); // served from NVMe through host memory, then promoted
            engine.awaitMoves();
            assertThat(events("promoted NVME->HBM")).isEqualTo(1);
            assertThat(events("promoted NVME->DRAM")).isZero();
            assertThat(copier.reads()).isEqualTo(1);
            assertThat(engine.info(first).tiers()).containsExactly(TierId.HBM, TierId.NVME);
            assertReadsBack(engine, first, 1); // now from HBM: checked in host memory on the way out
            for (int i = 0; i < keys.size(); i++) {
                assertReadsBack(engine, keys.get(i), i + 1);
            }
            assertThat(events("checksum HBM") + events("checksum NVME")).isZero();
        }
    }

    @Test
    void aBlockDamagedOnItsWayIntoTheDeviceIsRefusedAndItsGoodNvmeCopyStays() throws Exception {
        try (TierEngine engine = open(false)) {
            List<BlockKey> keys = putChain(engine, 24);
            BlockKey first = keys.getFirst();
            copier.damageNextRead();
            assertReadsBack(engine, first, 1);
            engine.awaitMoves();
            assertThat(copier.reads()).isEqualTo(1);
            assertThat(events("checksum HBM")).isEqualTo(1);
            assertThat(events("promoted NVME->HBM")).isZero();
            assertThat(engine.info(first).tiers()).containsExactly(TierId.NVME);
            assertThat(engine.tier(TierId.HBM).contains(first)).isFalse();
            assertReadsBack(engine, first, 1); // the next hit promotes it, undamaged this time
            engine.awaitMoves();
            assertThat(engine.info(first).tiers()).containsExactly(TierId.HBM, TierId.NVME);
            assertReadsBack(engine, first, 1);
        }
    }

    @Test
    void aBlockDamagedOnDiskAfterADirectDemotionFailsItsChecksumOnReadAndIsDropped() throws Exception {
        try (TierEngine engine = open(false)) {
            List<BlockKey> keys = putChain(engine, 24);
            BlockKey first = keys.getFirst();
            NvmeTier nvme = (NvmeTier) engine.tier(TierId.NVME);
            TestBlocks.flipAByte(nvme, first);
            assertThatThrownBy(() -> engine.get(first, arena.allocate(BLOCK)))
                    .isInstanceOf(ChecksumMismatchException.class);
            assertThat(events("checksum NVME")).isEqualTo(1);
            assertThat(nvme.checksumFailures()).isEqualTo(1);
            assertThat(engine.info(first)).isNull();
            assertReadsBack(engine, keys.get(1), 2);
        }
    }

    /**
     * A failing drive: the copy into the device arrives damaged, and the host read that should tell which side is
     * bad finds the block file cut short (bytes gone). The NVMe tier drops that copy; the catalog must drop it too
     * (and say so to listeners, which keep tenants' bytes from these events), not go on offering a copy no tier
     * holds.
     */
    @Test
    void aCopyTheDriveCannotReadBackDuringADirectPromotionIsDroppedFromTheCatalog() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean cutAfterNextRead = new java.util.concurrent.atomic.AtomicBoolean();
        Function<StandInDeviceFileCopier, DeviceFileCopier> failingDrive = standIn -> new DeviceFileCopier() {
            @Override
            public String name() {
                return standIn.name();
            }

            @Override
            public boolean standIn() {
                return true;
            }

            @Override
            public void write(long deviceOffset, BlockFile file, long fileOffset, long length) throws IOException {
                standIn.write(deviceOffset, file, fileOffset, length);
            }

            @Override
            public void read(BlockFile file, long fileOffset, long deviceOffset, long length) throws IOException {
                standIn.read(file, fileOffset, deviceOffset, length);
                if (cutAfterNextRead.getAndSet(false)) {
                    try (var ch = java.nio.channels.FileChannel.open(
                            Path.of(file.path()), java.nio.file.StandardOpenOption.WRITE)) {
                        ch.truncate(fileOffset);
                    }
                }
            }

            @Override
            public void close() {}
        };
        Map<TierId, java.util.concurrent.atomic.AtomicLong> held = new ConcurrentHashMap<>();
        EngineEvents ledger = new EngineEvents() {
            @Override
            public void copyAdded(TierId tier, BlockRecord block) {
                held.computeIfAbsent(tier, t -> new java.util.concurrent.atomic.AtomicLong())
                        .addAndGet(block.length());
            }

            @Override
            public void copyRemoved(TierId tier, BlockKey key, int length) {
                held.computeIfAbsent(tier, t -> new java.util.concurrent.atomic.AtomicLong())
                        .addAndGet(-length);
            }

            @Override
            public void readFailed(TierId tier, BlockKey key) {
                count("unreadable " + tier);
            }
        };
        StandInDeviceFileCopier[] standIn = new StandInDeviceFileCopier[1];
        try (TierEngine engine = open(dir, false, ledger, standIn, failingDrive)) {
            List<BlockKey> keys = putChain(engine, 24);
            BlockKey first = keys.getFirst();
            NvmeTier nvme = (NvmeTier) engine.tier(TierId.NVME);
            assertThat(engine.info(first).tiers()).containsExactly(TierId.NVME);
            standIn[0].damageNextRead();
            cutAfterNextRead.set(true);
            assertReadsBack(engine, first, 1); // served through host memory, then promoted straight to HBM
            engine.awaitMoves();
            assertThat(nvme.readFailures())
                    .as("the NVMe tier dropped the unreadable copy")
                    .isEqualTo(1);
            assertThat(nvme.contains(first)).isFalse();
            assertThat(engine.info(first))
                    .as("no tier holds it: the catalog drops it")
                    .isNull();
            assertThat(events("unreadable NVME")).isEqualTo(1);
            long inNvme = 0;
            for (java.util.Iterator<BlockInfo> it = engine.blocks(); it.hasNext(); ) {
                BlockInfo b = it.next();
                if (b.residentIn(TierId.NVME)) {
                    inNvme += b.length();
                }
            }
            assertThat(held.get(TierId.NVME).get())
                    .as("bytes announced in NVMe equal the copies the catalog shows there")
                    .isEqualTo(inNvme);
        }
    }

    @Test
    void withReadBackABlockDamagedInHbmIsNeverIndexedOnNvme() throws Exception {
        try (TierEngine engine = open(true)) {
            assertThat(engine.deviceStorageRoute()).contains("demotions read back");
            BlockKey key = TestBlocks.key("m", 7);
            engine.put(key, null, TestBlocks.bytes(arena, 7, BLOCK));
            DeviceTier hbm = (DeviceTier) engine.tier(TierId.HBM);
            MemorySegment device = hbm.region(); // host memory here, so the test can damage it at rest
            long at = hbm.slotOffset(key) + 999;
            device.set(ValueLayout.JAVA_BYTE, at, (byte) (device.get(ValueLayout.JAVA_BYTE, at) ^ 0x08));
            engine.evict(TierId.HBM, 0, 1);
            assertThat(copier.writes()).isEqualTo(1);
            assertThat(engine.tier(TierId.NVME).contains(key)).as("not indexed").isFalse();
            assertThat(((NvmeTier) engine.tier(TierId.NVME)).checksumFailures()).isEqualTo(1);
            assertThat(events("checksum HBM")).isEqualTo(1);
            assertThat(engine.info(key)).as("the only copy was bad").isNull();
            BlockKey good = TestBlocks.key("m", 8);
            engine.put(good, null, TestBlocks.bytes(arena, 8, BLOCK));
            engine.evict(TierId.HBM, 0, 1);
            assertThat(engine.info(good).tiers()).containsExactly(TierId.NVME);
            assertReadsBack(engine, good, 8);
        }
        try (TierEngine engine = open(true)) {
            assertThat(engine.info(TestBlocks.key("m", 7))).isNull();
            assertReadsBack(engine, TestBlocks.key("m", 8), 8);
        }
    }

    @Test
    void withoutReadBackABlockDamagedInHbmIsCaughtOnItsFirstReadFromNvme() throws Exception {
        try (TierEngine engine = open(false)) {
            BlockKey key = TestBlocks.key("m", 7);
            engine.put(key, null, TestBlocks.bytes(arena, 7, BLOCK));
            DeviceTier hbm = (DeviceTier) engine.tier(TierId.HBM);
            long at = hbm.slotOffset(key) + 999;
            hbm.region().set(ValueLayout.JAVA_BYTE, at, (byte) (hbm.region().get(ValueLayout.JAVA_BYTE, at) ^ 0x08));
            engine.evict(TierId.HBM, 0, 1);
            assertThat(engine.info(key).tiers()).containsExactly(TierId.NVME);
            assertThatThrownBy(() -> engine.get(key, arena.allocate(BLOCK)))
                    .isInstanceOf(ChecksumMismatchException.class);
            assertThat(events("checksum NVME")).isEqualTo(1);
            assertThat(engine.info(key)).isNull();
        }
    }

    @Test
    void blocksDemotedFromTheDeviceAreFoundAfterARestartAndPromoteIntoTheNewDeviceTier() throws Exception {
        List<BlockKey> keys;
        int onNvme;
        try (TierEngine engine = open(false)) {
            keys = putChain(engine, 24);
            onNvme = engine.tier(TierId.NVME).blockCount();
        }
        try (TierEngine engine = open(false)) {
            var found = engine.lookup("m", keys.stream().map(BlockKey::hash).toList());
            // HBM is volatile: the chain is found up to the first block that lived only there
            assertThat(engine.tier(TierId.NVME).blockCount()).isEqualTo(onNvme);
            assertThat(found.matchedBlocks()).isGreaterThanOrEqualTo(16);
            assertThat(found.tiers()).containsOnly(TierId.NVME);
            for (int i = 0; i < found.matchedBlocks(); i++) {
                assertReadsBack(engine, keys.get(i), i + 1);
            }
            engine.awaitMoves();
            assertThat(copier.reads()).isGreaterThanOrEqualTo(1);
            assertThat(events("promoted NVME->HBM")).isEqualTo(copier.reads());
            assertReadsBack(engine, keys.get(found.matchedBlocks() - 1), found.matchedBlocks());
        }
    }

    @Test
    void aDeviceStoragePathNeedsADeviceTierAndAnNvmeTier() throws Exception {
        StandInDeviceFileCopier stray = new StandInDeviceFileCopier(arena.allocate(65536, 4096));
        List<BlockTier> tiers = List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 16L * 65536, 4L * 65536));
        try {
            assertThatThrownBy(() -> new TierEngine(
                            tiers, Map.of(), Duration.ofMinutes(1), EngineEvents.NONE, Clock.systemUTC(), stray, false))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("needs an HBM tier in device memory and an NVMe tier");
        } finally {
            tiers.forEach(BlockTier::close);
        }
    }

    @Test
    void aProcessKilledWhileDemotingFromTheDeviceLeavesAConsistentIndex() throws Exception {
        String javaBin = ProcessHandle.current().info().command().orElse("java");
        Process child = new ProcessBuilder(
                        javaBin,
                        "--enable-native-access=ALL-UNNAMED",
                        "-cp",
                        System.getProperty("java.class.path"),
                        DeviceDemotionCrashWriter.class.getName(),
                        dir.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        List<Long> acknowledged = new ArrayList<>();
        try (var out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            String line;
            while ((line = out.readLine()) != null && System.nanoTime() < deadline) {
                if (line.startsWith("ACK ")) {
                    acknowledged.add(Long.parseLong(line.substring(4)));
                    if (acknowledged.size() >= 150) {
                        child.destroyForcibly(); // SIGKILL while blocks stream from HBM to NVMe
                        break;
                    }
                }
            }
        } finally {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
        assertThat(acknowledged).as("blocks on NVMe before the kill").hasSizeGreaterThanOrEqualTo(150);
        try (NvmeTier nvme = new NvmeTier(nvmeConfig(dir))) {
            List<BlockKey> indexed =
                    nvme.recovered().stream().map(BlockRecord::key).toList();
            for (long id : acknowledged) {
                assertThat(indexed).as("acknowledged block %d", id).contains(TestBlocks.key("m", id));
            }
            MemorySegment dst = arena.allocate(65536, 4096);
            for (BlockRecord r : nvme.recovered()) {
                nvme.read(r.key(), dst); // checks the CRC32C: nothing partial is indexed
                long id = idOf(r.key());
                assertThat(dst.asSlice(0, BLOCK).mismatch(TestBlocks.bytes(arena, id, BLOCK)))
                        .as("block %d", id)
                        .isEqualTo(-1);
            }
        }
        try (TierEngine engine = open(false)) {
            long id = acknowledged.getLast();
            assertReadsBack(engine, TestBlocks.key("m", id), id);
            engine.awaitMoves();
            assertThat(engine.info(TestBlocks.key("m", id)).tiers()).contains(TierId.HBM, TierId.NVME);
        }
    }

    /** The id a test key was made from (the writer numbers its blocks 1..n). */
    private static long idOf(BlockKey key) {
        for (long id = 1; id <= DeviceDemotionCrashWriter.MAX_BLOCKS; id++) {
            if (TestBlocks.key("m", id).equals(key)) {
                return id;
            }
        }
        throw new AssertionError("not a writer's key: " + key);
    }
}
