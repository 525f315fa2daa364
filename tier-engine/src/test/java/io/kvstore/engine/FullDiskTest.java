package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.NvmeTier;
import io.kvstore.tier.nvme.NvmeTierConfig;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The NVMe directory on a real, small filesystem (a tmpfs mounted by the test; skipped where it cannot
 * mount) that fills long before the tier's configured capacity of 8 MiB: the tier shrinks to what the
 * filesystem gave it and evicts its own blocks to make room; every acknowledged block stays readable byte
 * for byte or is counted as evicted, never lost silently; with no room for even one block file, blocks stay
 * in DRAM and new stores are refused; capacity grows back when files are deleted.
 */
class FullDiskTest {

    private static final int BLOCK = 64 * 1024;
    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;

    private Path mount;

    @BeforeEach
    void makeMountPoint() throws IOException {
        mount = Files.createDirectories(dir.resolve("small"));
    }

    private void mountTmpfs(String size) throws Exception {
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mount.toString())
                .redirectErrorStream(true)
                .start();
        boolean done = p.waitFor(30, TimeUnit.SECONDS);
        assumeTrue(
                done && p.exitValue() == 0,
                "cannot mount a tmpfs here (needs root): "
                        + new String(p.getInputStream().readAllBytes()));
    }

    @AfterEach
    void unmount() throws Exception {
        new ProcessBuilder("umount", "-l", mount.toString()).start().waitFor(30, TimeUnit.SECONDS);
    }

    /** Counts what the engine reports: demotion failures and blocks evicted from the last tier (gone). */
    private static final class Reported implements EngineEvents {
        final AtomicInteger demotionFailing = new AtomicInteger();
        final AtomicInteger droppedFromNvme = new AtomicInteger();

        @Override
        public void demotionFailing(TierId from, TierId to, String reason) {
            demotionFailing.incrementAndGet();
        }

        @Override
        public void evicted(TierId tier, EvictionPolicyKind policy, int bytes) {
            if (tier == TierId.NVME) {
                droppedFromNvme.incrementAndGet();
            }
        }
    }

    /** DRAM of 1 MiB over an NVMe tier configured for 8 MiB in 1 MiB files on the small filesystem. */
    private TierEngine engine(EngineEvents events) throws IOException {
        List<BlockTier> tiers = List.of(
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 16L * BLOCK, 4L * BLOCK),
                new NvmeTier(new NvmeTierConfig(List.of(mount.resolve("nvme")), 8 * MIB, MIB, MIB, 2)));
        return new TierEngine(
                tiers,
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, false)),
                Duration.ofMinutes(2),
                events,
                Clock.systemUTC());
    }

    private static TierStats stats(TierEngine engine, TierId tier) {
        return engine.stats().stream().filter(s -> s.tier() == tier).findFirst().orElseThrow();
    }

    /** Stores blocks {@code from..to} in a chain; the ids of those acknowledged go to {@code acknowledged}. */
    private static int store(TierEngine engine, Arena arena, long from, long to, List<Long> acknowledged)
            throws IOException {
        int refused = 0;
        BlockHash parent = null;
        for (long id = from; id <= to; id++) {
            BlockKey key = TestBlocks.key("full", id);
            try {
                engine.put(key, parent, TestBlocks.bytes(arena, id, BLOCK));
                acknowledged.add(id);
                parent = key.hash();
            } catch (TierFullException full) {
                refused++;
            }
            engine.awaitMoves();
        }
        return refused;
    }

    /** How many acknowledged blocks are gone; every one still there must read back byte for byte. */
    private static int gone(TierEngine engine, Arena arena, List<Long> acknowledged) throws IOException {
        MemorySegment dst = arena.allocate(BLOCK);
        int gone = 0;
        for (long id : acknowledged) {
            try {
                engine.get(TestBlocks.key("full", id), dst);
            } catch (BlockNotFoundException evicted) {
                gone++;
                continue;
            }
            assertThat(dst.asByteBuffer())
                    .as("block " + id)
                    .isEqualTo(TestBlocks.bytes(arena, id, BLOCK).asByteBuffer());
        }
        return gone;
    }

    @Test
    void aFullFilesystemShrinksTheNvmeTierWhichEvictsItsOwnBlocks() throws Exception {
        mountTmpfs("3m"); // room for two 1 MiB block files and the index, of the 8 files configured
        Reported reported = new Reported();
        List<Long> acknowledged = new ArrayList<>();
        try (Arena arena = Arena.ofShared();
                TierEngine engine = engine(reported)) {
            int refused = store(engine, arena, 1, 200, acknowledged);

            TierStats nvme = stats(engine, TierId.NVME);
            assertThat(refused)
                    .as("the NVMe tier makes room instead of refusing")
                    .isZero();
            assertThat(nvme.usableBytes()).isBetween(MIB, 2 * MIB);
            assertThat(nvme.usedBytes()).isLessThanOrEqualTo(nvme.usableBytes());
            assertThat(nvme.capacityBytes()).isEqualTo(8 * MIB);
            assertThat(nvme.degraded()).contains("out of space", "No space left on device");
            assertThat(nvme.outOfSpaceErrors())
                    .as("one error per shrink, not one per block")
                    .isBetween(1L, 3L);
            assertThat(reported.demotionFailing.get()).isZero();
            assertThat(stats(engine, TierId.DRAM).degraded()).isNull();
            // 200 blocks of 64 KiB do not fit 3 MiB: the oldest left the NVMe tier by its policy, counted
            int gone = gone(engine, arena, acknowledged);
            assertThat(gone).isGreaterThan(100);
            assertThat(gone).as("every block gone was reported").isEqualTo(reported.droppedFromNvme.get());
        }
    }

    @Test
    void withNoRoomForAnyBlockFileBlocksStayInDramAndStoresAreRefused() throws Exception {
        mountTmpfs("768k"); // the index fits, no 1 MiB block file does
        Reported reported = new Reported();
        List<Long> acknowledged = new ArrayList<>();
        try (Arena arena = Arena.ofShared();
                TierEngine engine = engine(reported)) {
            int refused = store(engine, arena, 1, 40, acknowledged);

            assertThat(refused).isGreaterThan(0);
            assertThat(acknowledged).hasSizeGreaterThanOrEqualTo(16);
            assertThat(gone(engine, arena, acknowledged))
                    .as("acknowledged blocks lost")
                    .isZero();
            assertThat(reported.demotionFailing.get())
                    .as("reported once, not per block")
                    .isEqualTo(1);
            assertThat(stats(engine, TierId.NVME).usableBytes()).isZero();
            assertThat(stats(engine, TierId.NVME).degraded()).contains("out of space");
            assertThat(stats(engine, TierId.DRAM).degraded()).contains("demotion from DRAM to NVME fails");
            assertThatThrownBy(() -> engine.put(TestBlocks.key("full", 999), null, TestBlocks.bytes(arena, 999, BLOCK)))
                    .isInstanceOf(TierFullException.class);
        }
    }

    @Test
    void capacityGrowsBackWhenTheFilesystemHasRoomAgain() throws Exception {
        mountTmpfs("4m");
        Path filler = mount.resolve("filler");
        Files.write(filler, new byte[(int) (2 * MIB)]);
        Reported reported = new Reported();
        List<Long> acknowledged = new ArrayList<>();
        try (Arena arena = Arena.ofShared();
                TierEngine engine = engine(reported)) {
            store(engine, arena, 1, 60, acknowledged);
            long shrunk = stats(engine, TierId.NVME).usableBytes();
            assertThat(shrunk).isLessThan(2 * MIB);

            Files.delete(filler);
            Thread.sleep(1_200); // capacity is rechecked at most once a second
            int refused = store(engine, arena, 61, 120, acknowledged);

            TierStats nvme = stats(engine, TierId.NVME);
            assertThat(refused).isZero();
            assertThat(nvme.usableBytes()).isGreaterThanOrEqualTo(shrunk + 2 * MIB);
            assertThat(nvme.usedBytes()).as("the regained room is used").isGreaterThan(shrunk);
            assertThat(gone(engine, arena, acknowledged)).isEqualTo(reported.droppedFromNvme.get());
        }
    }
}
