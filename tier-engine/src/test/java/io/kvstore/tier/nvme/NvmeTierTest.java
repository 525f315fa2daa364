package io.kvstore.tier.nvme;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.engine.TestBlocks;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierFullException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NvmeTierTest {

    private static final int BLOCK = 20_000; // not a multiple of 4 KiB: exercises the aligned bounce path

    @TempDir
    Path dir;

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        arena.close();
    }

    private NvmeTierConfig config(Path path, long capacity) {
        return new NvmeTierConfig(List.of(path), capacity, 1 << 20, 256 * 1024, 4);
    }

    private BlockRecord record(long id, int length, MemorySegment bytes) {
        return new BlockRecord(
                TestBlocks.key("m", id), id == 1 ? null : BlockHash.ofLong(id - 1), length, Checksums.crc32c(bytes));
    }

    private BlockRecord store(NvmeTier tier, long id) throws IOException {
        MemorySegment bytes = TestBlocks.bytes(arena, id, BLOCK);
        BlockRecord r = record(id, BLOCK, bytes);
        tier.write(r, bytes);
        return r;
    }

    private void assertReadsBack(NvmeTier tier, long id) throws IOException {
        MemorySegment dst = arena.allocate(BLOCK);
        tier.read(TestBlocks.key("m", id), dst);
        assertThat(dst.mismatch(TestBlocks.bytes(arena, id, BLOCK)))
                .as("block %d", id)
                .isEqualTo(-1);
    }

    @Test
    void aBlockForgottenAtRestartStaysReadableUntilDeletedAndIsGoneAfterACrashBeforeThat() throws Exception {
        long slot;
        try (NvmeTier tier = new NvmeTier(config(dir, 4 << 20))) {
            store(tier, 1);
            store(tier, 2);
            slot = tier.usedBytes() / 2;
            tier.forgetAtRestart(List.of(TestBlocks.key("m", 1), TestBlocks.key("m", 9)));
            // a reader of the deleted block still reads it: its slot is kept until the delete frees it
            assertThat(tier.contains(TestBlocks.key("m", 1))).isTrue();
            assertReadsBack(tier, 1);
            assertThat(tier.usedBytes()).isEqualTo(2 * slot);
        } // the process dies before the delete that frees the slot
        try (NvmeTier tier = new NvmeTier(config(dir, 4 << 20))) {
            assertThat(tier.recovered()).extracting(BlockRecord::key).containsExactly(TestBlocks.key("m", 2));
            assertThat(tier.contains(TestBlocks.key("m", 1))).isFalse();
            assertThat(tier.usedBytes())
                    .as("the forgotten block's slot is free space")
                    .isEqualTo(slot);
            assertReadsBack(tier, 2);
        }
    }

    @Test
    void aDeleteOfOneCopyLeavesACopyOfTheSameKeyWrittenAfterIt() throws Exception {
        BlockKey key = TestBlocks.key("m", 1);
        try (NvmeTier tier = new NvmeTier(config(dir, 4 << 20))) {
            store(tier, 1);
            long first = tier.copyOf(key);
            assertThat(tier.delete(key, first)).isTrue();
            assertThat(tier.copyOf(key)).isEqualTo(BlockTier.NO_COPY);
            store(tier, 1); // the same key again, likely in the very slot the first copy had
            long second = tier.copyOf(key);
            assertThat(second).isNotIn(BlockTier.NO_COPY, first);

            assertThat(tier.delete(key, first))
                    .as("a late free of the first copy")
                    .isFalse();
            assertReadsBack(tier, 1);
            assertThat(tier.delete(key, second)).isTrue();
            assertThat(tier.contains(key)).isFalse();
            assertThat(tier.usedBytes()).isZero();
        }
    }

    @Test
    void blocksSurviveARestartByteExact() throws Exception {
        try (NvmeTier tier = new NvmeTier(config(dir, 4 << 20))) {
            assertThat(tier.provider()).isEqualTo("file(O_DIRECT)");
            for (long id = 1; id <= 50; id++) {
                store(tier, id);
            }
            tier.delete(TestBlocks.key("m", 7));
        }
        try (NvmeTier tier = new NvmeTier(config(dir, 4 << 20))) {
            assertThat(tier.recovered()).hasSize(49);
            assertThat(tier.recovered()).anySatisfy(r -> {
                assertThat(r.key()).isEqualTo(TestBlocks.key("m", 2));
                assertThat(r.parent()).isEqualTo(BlockHash.ofLong(1));
            });
            assertThat(tier.contains(TestBlocks.key("m", 7))).isFalse();
            for (long id = 1; id <= 50; id++) {
                if (id != 7) {
                    assertReadsBack(tier, id);
                }
            }
            assertThat(tier.usedBytes()).isEqualTo(49L * 20_480);
            // the free space was reconciled: the deleted block's slot can be used again
            store(tier, 100);
            assertReadsBack(tier, 100);
        }
    }

    @Test
    void batchWriteAndReadKeepSeveralRequestsInFlight() throws Exception {
        try (NvmeTier tier = new NvmeTier(config(dir, 8 << 20))) {
            List<BlockRecord> records = new ArrayList<>();
            List<MemorySegment> sources = new ArrayList<>();
            List<BlockKey> keys = new ArrayList<>();
            List<MemorySegment> targets = new ArrayList<>();
            for (long id = 1; id <= 64; id++) {
                MemorySegment bytes = TestBlocks.bytes(arena, id, 64 * 1024);
                records.add(new BlockRecord(TestBlocks.key("m", id), null, 64 * 1024, Checksums.crc32c(bytes)));
                sources.add(bytes);
                keys.add(TestBlocks.key("m", id));
                targets.add(arena.allocate(64 * 1024, 4096));
            }
            tier.writeAll(records, sources);
            tier.readAll(keys, targets);
            for (int i = 0; i < 64; i++) {
                assertThat(targets.get(i).mismatch(sources.get(i))).isEqualTo(-1);
            }
        }
    }

    @Test
    void flippedByteOnDiskFailsTheChecksumAndDropsTheBlock() throws Exception {
        try (NvmeTier tier = new NvmeTier(config(dir, 4 << 20))) {
            store(tier, 1);
            store(tier, 2);
            BlockKey key = TestBlocks.key("m", 2);
            TestBlocks.flipAByte(tier, key);
            assertThatThrownBy(() -> tier.read(key, arena.allocate(BLOCK)))
                    .isInstanceOf(ChecksumMismatchException.class);
            assertThat(tier.checksumFailures()).isEqualTo(1);
            assertThat(tier.contains(key)).isFalse();
            assertThatThrownBy(() -> tier.read(key, arena.allocate(BLOCK))).isInstanceOf(BlockNotFoundException.class);
            assertReadsBack(tier, 1);
        }
        try (NvmeTier tier = new NvmeTier(config(dir, 4 << 20))) {
            assertThat(tier.recovered()).extracting(BlockRecord::key).containsExactly(TestBlocks.key("m", 1));
        }
    }

    @Test
    void aBlockFileCutShortWhileDownDoesNotLeaveBlocksThatFailWithAnIoErrorForever() throws Exception {
        BlockKey cut = TestBlocks.key("m", 2);
        Path file;
        long end;
        try (NvmeTier tier = new NvmeTier(config(dir, 2 << 20))) {
            store(tier, 1);
            store(tier, 2);
            file = tier.fileOf(cut);
            end = tier.offsetOf(cut) % tier.fileSize() + 4096; // the file now ends inside block 2's slot
        }
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(end);
        }
        try (NvmeTier tier = new NvmeTier(config(dir, 2 << 20))) {
            assertReadsBack(tier, 1);
            // its bytes are gone: not served, and not left in the tier failing every read with EOF
            assertThatThrownBy(() -> tier.read(cut, arena.allocate(BLOCK)))
                    .isInstanceOfAny(BlockNotFoundException.class, ChecksumMismatchException.class);
            assertThat(tier.contains(cut)).isFalse();
            // and its slot is usable again
            store(tier, 3);
            assertReadsBack(tier, 3);
        }
    }

    @Test
    void fullTierRefusesAndKeepsServing() throws Exception {
        try (NvmeTier tier = new NvmeTier(config(dir, 1 << 20))) {
            int stored = 0;
            try {
                for (long id = 1; id <= 100; id++) {
                    store(tier, id);
                    stored++;
                }
            } catch (TierFullException full) {
                assertThat(full).hasMessageContaining("no free slot");
            }
            assertThat(stored).isEqualTo(48); // 4 slabs of 256 KiB hold 12 slots of 20 KiB each
            for (long id = 1; id <= stored; id++) {
                assertReadsBack(tier, id);
            }
        }
    }

    @Test
    void diskFullIsAClearErrorAndNothingPointsAtUnwrittenData() throws Exception {
        Path mount = Files.createTempDirectory("kvstore-full");
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=1200k", "tmpfs", mount.toString())
                .redirectErrorStream(true)
                .start();
        String output = new String(p.getInputStream().readAllBytes());
        assumeTrue(p.waitFor() == 0, () -> "skipped: cannot mount a small tmpfs here (" + output.trim() + ")");
        try {
            // 4 files of 1 MiB configured on a 1.2 MiB filesystem: the second file cannot be preallocated
            try (NvmeTier tier = new NvmeTier(config(mount, 4 << 20))) {
                IOException failure = null;
                int stored = 0;
                for (long id = 1; id <= 100 && failure == null; id++) {
                    try {
                        store(tier, id);
                        stored++;
                    } catch (IOException e) {
                        failure = e;
                    }
                }
                assertThat(failure).isNotNull();
                assertThat(failure).hasMessageContaining("fallocate").hasMessageContaining("No space left on device");
                assertThat(stored).isBetween(1, 48);
                for (long id = 1; id <= stored; id++) {
                    assertReadsBack(tier, id);
                }
                assertThat(tier.blockCount()).isEqualTo(stored);
            }
            // the operator frees space; on restart every indexed block must read back whole
            assertThat(new ProcessBuilder("mount", "-o", "remount,size=16m", mount.toString())
                            .start()
                            .waitFor())
                    .isZero();
            try (NvmeTier tier = new NvmeTier(config(mount, 4 << 20))) {
                assertThat(tier.recovered().size()).isEqualTo(tier.blockCount()).isPositive();
                for (BlockRecord r : tier.recovered()) {
                    MemorySegment dst = arena.allocate(BLOCK);
                    tier.read(r.key(), dst);
                }
            }
        } finally {
            new ProcessBuilder("umount", mount.toString()).start().waitFor();
            Files.deleteIfExists(mount);
        }
    }

    @Test
    void reopeningWithAnotherGeometryIsRefused() throws Exception {
        try (NvmeTier tier = new NvmeTier(config(dir, 4 << 20))) {
            store(tier, 1);
        }
        assertThatThrownBy(() -> new NvmeTier(config(dir, 8 << 20)))
                .hasMessageContaining("was created with")
                .hasMessageContaining("capacity=4194304");
    }

    @Test
    void badConfigurationNamesTheProperty() {
        assertThatThrownBy(() -> new NvmeTierConfig(List.of(dir), 3 << 20, 2 << 20, 256 * 1024, 4))
                .hasMessageContaining("kvstore.tiers.nvme.capacity");
        assertThatThrownBy(() -> new NvmeTierConfig(List.of(), 4 << 20, 1 << 20, 256 * 1024, 4))
                .hasMessageContaining("kvstore.tiers.nvme.paths");
    }

    @Test
    void filesystemWithoutODirectWorksBuffered() throws Exception {
        // ramfs has no direct I/O at all (tmpfs has it since Linux 6.6), so it stands in for such filesystems
        Path mount = Files.createTempDirectory("kvstore-ramfs");
        Process p = new ProcessBuilder("mount", "-t", "ramfs", "ramfs", mount.toString())
                .redirectErrorStream(true)
                .start();
        String output = new String(p.getInputStream().readAllBytes());
        assumeTrue(p.waitFor() == 0, () -> "skipped: cannot mount ramfs here (" + output.trim() + ")");
        try {
            try (NvmeTier tier = new NvmeTier(config(mount, 2 << 20))) {
                assertThat(tier.provider()).isEqualTo("file(buffered)");
                store(tier, 1);
                assertReadsBack(tier, 1);
            }
            try (NvmeTier tier = new NvmeTier(config(mount, 2 << 20))) {
                assertReadsBack(tier, 1);
            }
        } finally {
            new ProcessBuilder("umount", mount.toString()).start().waitFor();
            Files.deleteIfExists(mount);
        }
    }
}
