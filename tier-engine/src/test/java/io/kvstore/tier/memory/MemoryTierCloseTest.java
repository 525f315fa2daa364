package io.kvstore.tier.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.TestBlocks;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierClosedException;
import io.kvstore.tier.TierFullException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A memory tier whose memory is a raw native allocation (as with pinned host memory or UCX-allocated memory):
 * here anonymous pages that close unmaps, so a copy or a checksum that touched the tier's memory after it was
 * freed would crash the JVM instead of reading garbage quietly.
 */
class MemoryTierCloseTest {

    private static final int BLOCK = 16 * 1024;

    private final AtomicBoolean unmapped = new AtomicBoolean();
    private final MemoryTier tier =
            new MemoryTier(TierId.DRAM, new UcxSharedMemoryProvider(this::mapAnonymous), 1 << 20, 64 * 1024);

    @Test
    void callsRacingCloseEitherCompleteOrFailAsClosedAndNeverTouchFreedMemory() throws Exception {
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch running = new CountDownLatch(threads);
        AtomicLong calls = new AtomicLong();
        List<Future<TierClosedException>> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int worker = t;
            workers.add(pool.submit(() -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment dst = arena.allocate(BLOCK);
                    running.countDown();
                    for (long i = 0; ; i++) {
                        long id = worker * 1_000_000L + i % 8;
                        MemorySegment src = TestBlocks.bytes(arena, id, BLOCK);
                        BlockRecord record =
                                new BlockRecord(TestBlocks.key("ns", id), null, BLOCK, Checksums.crc32c(src));
                        try {
                            tier.write(record, src);
                            tier.verifiedView(record.key());
                            tier.read(record.key(), dst);
                            assertThat(dst.mismatch(src)).as("bytes read back").isEqualTo(-1);
                            tier.delete(record.key());
                        } catch (TierClosedException closed) {
                            return closed;
                        } catch (TierFullException | BlockNotFoundException absent) {
                            // only once close began: it empties the table
                        }
                        calls.incrementAndGet();
                    }
                }
            }));
        }
        running.await();
        while (calls.get() < 2_000) {
            Thread.onSpinWait();
        }
        tier.close();
        assertThat(unmapped).as("the tier's memory was freed").isTrue();
        for (Future<TierClosedException> worker : workers) {
            assertThat(worker.get(60, TimeUnit.SECONDS)).hasMessage("DRAM tier closed");
        }
        pool.shutdown();
    }

    @Test
    void callsAfterCloseFailWithTheTierNamed() throws Exception {
        BlockKey key = TestBlocks.key("ns", 1);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = TestBlocks.bytes(arena, 1, BLOCK);
            tier.write(new BlockRecord(key, null, BLOCK, Checksums.crc32c(src)), src);
            tier.close();
            assertThatThrownBy(() -> tier.write(new BlockRecord(key, null, BLOCK, Checksums.crc32c(src)), src))
                    .isInstanceOf(TierClosedException.class)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("DRAM tier closed");
            assertThatThrownBy(() -> tier.read(key, arena.allocate(BLOCK))).hasMessage("DRAM tier closed");
            assertThatThrownBy(() -> tier.verifiedView(key)).hasMessage("DRAM tier closed");
            assertThatThrownBy(() -> tier.reserveSlot(BLOCK)).hasMessage("DRAM tier closed");
            assertThat(tier.contains(key)).isFalse();
            tier.close(); // a second close is harmless
        }
    }

    @Test
    void segmentsHandedOutBeforeCloseRefuseAccessAfterIt() throws Exception {
        BlockKey key = TestBlocks.key("ns", 2);
        MemorySegment view;
        MemorySegment reserved;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = TestBlocks.bytes(arena, 2, BLOCK);
            tier.write(new BlockRecord(key, null, BLOCK, Checksums.crc32c(src)), src);
            view = tier.verifiedView(key);
            reserved = tier.slot(tier.reserveSlot(BLOCK), BLOCK);
        }
        tier.close();
        assertThat(unmapped).isTrue();
        // a lease's reader, a mover's send or an in-place fill that outlived the tier: an exception, not a crash
        assertThatThrownBy(() -> view.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> Checksums.crc32c(view)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> reserved.fill((byte) 1)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> tier.region().get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    private static final MethodHandle MMAP = downcall(
            "mmap",
            FunctionDescriptor.of(
                    ValueLayout.ADDRESS,
                    ValueLayout.ADDRESS,
                    ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_LONG));
    private static final MethodHandle MUNMAP =
            downcall("munmap", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));

    private static MethodHandle downcall(String name, FunctionDescriptor descriptor) {
        Linker linker = Linker.nativeLinker();
        return linker.downcallHandle(linker.defaultLookup().find(name).orElseThrow(), descriptor);
    }

    /** Anonymous read-write pages, unmapped when the region is freed: any later touch faults. */
    private UcxSharedMemoryProvider.SharedMemory mapAnonymous(long bytes) {
        try {
            MemorySegment pages =
                    ((MemorySegment) MMAP.invokeExact(MemorySegment.NULL, bytes, 3, 0x22, -1, 0L)).reinterpret(bytes);
            assertThat(pages.address()).as("mmap").isNotEqualTo(-1L);
            return new UcxSharedMemoryProvider.SharedMemory(pages, () -> {
                try {
                    assertThat((int) MUNMAP.invokeExact(pages, bytes))
                            .as("munmap")
                            .isZero();
                } catch (Throwable t) {
                    throw new AssertionError(t);
                }
                unmapped.set(true);
            });
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }
}
