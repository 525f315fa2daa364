package io.kvstore.tier.nvme;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.engine.TestBlocks;
import io.kvstore.tier.Checksums;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Calls racing {@link NvmeTier#close}: refused with a clear exception once it began, waited for while under way. */
class NvmeTierCloseTest {

    private static final int BLOCK = 8192;

    @TempDir
    Path dir;

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void freeMemory() {
        arena.close();
    }

    private NvmeTier open() throws IOException {
        return new NvmeTier(new NvmeTierConfig(List.of(dir), 8 << 20, 1 << 20, 256 * 1024, 2));
    }

    private MemorySegment bytes(long id) {
        return TestBlocks.bytes(arena, id, BLOCK);
    }

    private BlockRecord record(long id) {
        return new BlockRecord(TestBlocks.key("m", id), null, BLOCK, Checksums.crc32c(bytes(id)));
    }

    @Test
    void everyCallAfterCloseFailsAsClosedInsteadOfReachingRocksDb() throws Exception {
        NvmeTier tier = open();
        BlockKey key = TestBlocks.key("m", 1);
        tier.write(record(1), bytes(1));
        long copy = tier.copyOf(key);
        tier.close();

        MemorySegment dst = arena.allocate(BLOCK, 4096);
        StandInDeviceFileCopier copier = new StandInDeviceFileCopier(arena.allocate(BLOCK, 4096));
        assertThatThrownBy(() -> tier.delete(key)).hasMessage("NVMe tier closed");
        assertThatThrownBy(() -> tier.delete(key, copy)).hasMessage("NVMe tier closed");
        assertThatThrownBy(() -> tier.forgetAtRestart(List.of(key))).hasMessage("NVMe tier closed");
        assertThatThrownBy(() -> tier.dropCorrupt(key)).hasMessage("NVMe tier closed");
        assertThatThrownBy(() -> tier.read(key, dst)).hasMessage("NVMe tier closed");
        assertThatThrownBy(() -> tier.readAll(List.of(key), List.of(dst))).hasMessage("NVMe tier closed");
        assertThatThrownBy(() -> tier.readToDevice(key, 0, copier)).hasMessage("NVMe tier closed");
        assertThatThrownBy(() -> tier.write(record(2), bytes(2))).hasMessage("NVMe tier closed");
        assertThatThrownBy(() -> tier.writeAllFromDevice(List.of(record(2)), List.of(0L), copier, false))
                .hasMessage("NVMe tier closed");
        tier.close(); // a second close is harmless

        try (NvmeTier reopened = open()) {
            assertThat(reopened.recovered())
                    .as("nothing written or deleted after close")
                    .extracting(BlockRecord::key)
                    .containsExactly(key);
        }
    }

    @Test
    void closeWaitsForACopyUnderWayBeforeItClosesTheFiles() throws Exception {
        NvmeTier tier = open();
        BlockKey key = TestBlocks.key("m", 1);
        tier.write(record(1), bytes(1));
        CountDownLatch copying = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        MemorySegment device = arena.allocate(BLOCK, 4096);
        StandInDeviceFileCopier copier = new StandInDeviceFileCopier(device);
        DeviceFileCopier slow = new DeviceFileCopier() {
            @Override
            public String name() {
                return copier.name();
            }

            @Override
            public boolean standIn() {
                return true;
            }

            @Override
            public void write(long deviceOffset, BlockFile file, long fileOffset, long length) throws IOException {
                copier.write(deviceOffset, file, fileOffset, length);
            }

            @Override
            public void read(BlockFile file, long fileOffset, long deviceOffset, long length) throws IOException {
                copying.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
                copier.read(file, fileOffset, deviceOffset, length);
            }

            @Override
            public void close() {}
        };
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread reader = Thread.ofPlatform().start(() -> {
            try {
                outcome.set(tier.readToDevice(key, 0, slow));
            } catch (IOException | RuntimeException e) {
                outcome.set(e);
            }
        });
        assertThat(copying.await(60, TimeUnit.SECONDS)).isTrue();
        Thread closer = Thread.ofPlatform().start(tier::close);
        closer.join(500);
        boolean closedUnderTheCopy = !closer.isAlive();
        release.countDown();
        reader.join(10_000);
        closer.join(10_000);

        assertThat(closedUnderTheCopy)
                .as("close returned while a copy from its block file was under way")
                .isFalse();
        assertThat(outcome.get()).isEqualTo(record(1));
        assertThat(device.mismatch(bytes(1))).isEqualTo(-1);
        assertThat(closer.isAlive()).isFalse();
    }

    @Test
    void writesDeletesAndReadsRacingCloseEndCleanlyOrFailAsClosed() throws Exception {
        NvmeTier tier = open();
        ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
        AtomicLong calls = new AtomicLong();
        CountDownLatch started = new CountDownLatch(4);
        Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            long id = t + 1L;
            MemorySegment src = bytes(id);
            BlockRecord r = record(id);
            MemorySegment dst = arena.allocate(BLOCK, 4096);
            threads[t] = Thread.ofPlatform().start(() -> {
                started.countDown();
                try {
                    while (true) {
                        tier.write(r, src);
                        tier.read(r.key(), dst);
                        tier.forgetAtRestart(List.of(r.key()));
                        tier.delete(r.key());
                        calls.incrementAndGet();
                    }
                } catch (IllegalStateException closed) {
                    if (!"NVMe tier closed".equals(closed.getMessage())) {
                        unexpected.add(closed);
                    }
                } catch (IOException | RuntimeException e) {
                    unexpected.add(e);
                }
            });
        }
        started.await();
        while (calls.get() < 200) {
            Thread.onSpinWait();
        }
        tier.close();
        for (Thread t : threads) {
            t.join(10_000);
            assertThat(t.isAlive()).isFalse();
        }
        assertThat(unexpected).isEmpty();
    }
}
