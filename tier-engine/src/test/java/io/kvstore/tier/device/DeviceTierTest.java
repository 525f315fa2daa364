package io.kvstore.tier.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.Checksums;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The HBM tier's logic on CPU: {@link DeviceTier} over {@link EmulatedDeviceCopier} (host memory standing
 * in for a GPU, labelled emulated), alone and inside a {@link TierEngine} with a DRAM tier below it.
 * The CUDA copier's own test is {@code CudaDeviceCopierTest}, which runs where a GPU is.
 */
class DeviceTierTest {

    private static final int BLOCK = 16 * 1024;
    private final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        arena.close();
    }

    private MemorySegment bytes(long id) {
        MemorySegment s = arena.allocate(BLOCK, 4096);
        SplittableRandom r = new SplittableRandom(id);
        for (long i = 0; i < BLOCK; i += 8) {
            s.set(ValueLayout.JAVA_LONG, i, r.nextLong());
        }
        return s;
    }

    private static BlockRecord record(long id, MemorySegment bytes) {
        return new BlockRecord(
                new BlockKey("m", BlockHash.ofLong(id)), null, (int) bytes.byteSize(), Checksums.crc32c(bytes));
    }

    @Test
    void blocksCopiedToTheDeviceReadBackExactlyAndFreeTheirSlots() throws Exception {
        try (DeviceTier hbm = new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(8L * BLOCK), BLOCK)) {
            assertThat(hbm.provider()).isEqualTo("emulated-device");
            assertThat(hbm.emulated()).isTrue();
            List<BlockRecord> records = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                MemorySegment b = bytes(i);
                records.add(record(i, b));
                hbm.write(records.get(i), b);
            }
            assertThat(hbm.blockCount()).isEqualTo(8);
            assertThatThrownBy(() -> hbm.write(record(99, bytes(99)), bytes(99)))
                    .isInstanceOf(TierFullException.class);
            MemorySegment back = arena.allocate(BLOCK, 4096);
            for (int i = 0; i < 8; i++) {
                hbm.read(records.get(i).key(), back);
                assertThat(back.mismatch(bytes(i))).isEqualTo(-1);
            }
            assertThat(hbm.verifiedView(records.get(0).key()))
                    .as("no in-place views of device memory")
                    .isNull();
            assertThat(hbm.delete(records.get(3).key())).isTrue();
            assertThatThrownBy(() -> hbm.read(records.get(3).key(), back)).isInstanceOf(BlockNotFoundException.class);
            hbm.write(record(99, bytes(99)), bytes(99));
            assertThat(hbm.usedBytes()).isEqualTo(8L * BLOCK);
        }
    }

    @Test
    void aBlockCorruptedInHostMemoryNeverReachesTheDevice() throws Exception {
        try (DeviceTier hbm = new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(4L * BLOCK), BLOCK)) {
            MemorySegment b = bytes(1);
            BlockRecord r = record(1, b);
            b.set(ValueLayout.JAVA_BYTE, 100, (byte) (b.get(ValueLayout.JAVA_BYTE, 100) ^ 1));
            assertThatThrownBy(() -> hbm.write(r, b))
                    .isInstanceOf(ChecksumMismatchException.class)
                    .hasMessageContaining("in host memory");
            assertThat(hbm.contains(r.key())).isFalse();
            assertThat(hbm.usedBytes()).isZero();
        }
    }

    @Test
    void aBlockDamagedOnTheDeviceFailsItsChecksumWhenCopiedOut() throws Exception {
        EmulatedDeviceCopier copier = new EmulatedDeviceCopier(4L * BLOCK);
        try (DeviceTier hbm = new DeviceTier(TierId.HBM, copier, BLOCK)) {
            MemorySegment b = bytes(2);
            BlockRecord r = record(2, b);
            hbm.write(r, b);
            MemorySegment device = copier.region(); // host memory here, so the test can flip a bit
            device.set(ValueLayout.JAVA_BYTE, 7, (byte) (device.get(ValueLayout.JAVA_BYTE, 7) ^ 0x10));
            assertThatThrownBy(() -> hbm.read(r.key(), arena.allocate(BLOCK, 4096)))
                    .isInstanceOf(ChecksumMismatchException.class);
        }
    }

    @Test
    void enginesDemoteFromTheDeviceTierToDramAndPromoteBackOnHit() throws Exception {
        AtomicInteger demoted = new AtomicInteger();
        AtomicInteger promoted = new AtomicInteger();
        EngineEvents events = new EngineEvents() {
            @Override
            public void demoted(TierId from, TierId to, int bytes) {
                if (from == TierId.HBM && to == TierId.DRAM) {
                    demoted.incrementAndGet();
                }
            }

            @Override
            public void promoted(TierId from, TierId to, int bytes) {
                if (from == TierId.DRAM && to == TierId.HBM) {
                    promoted.incrementAndGet();
                }
            }
        };
        Map<TierId, TierSettings> settings = new EnumMap<>(TierId.class);
        settings.put(TierId.HBM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, true)); // promote on hit
        settings.put(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 1.0, 0.5, false));
        List<BlockTier> tiers = List.of(
                new DeviceTier(TierId.HBM, new EmulatedDeviceCopier(8L * BLOCK), BLOCK),
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 64L * BLOCK, BLOCK));
        try (TierEngine engine = new TierEngine(tiers, settings, Duration.ofSeconds(5), events, Clock.systemUTC())) {
            List<BlockKey> keys = new ArrayList<>();
            BlockHash parent = null;
            for (int i = 0; i < 20; i++) {
                BlockKey key = new BlockKey("m", BlockHash.ofLong(1000 + i));
                engine.put(key, parent, bytes(i));
                keys.add(key);
                parent = key.hash();
            }
            engine.awaitMoves();
            assertThat(demoted.get()).isGreaterThanOrEqualTo(12);
            assertThat(engine.info(keys.get(0)).fastestTier()).isEqualTo(TierId.DRAM);
            assertThat(engine.stats().getFirst().emulated()).isTrue();
            MemorySegment back = arena.allocate(BLOCK, 4096);
            for (int i = 0; i < 20; i++) {
                engine.get(keys.get(i), back);
                assertThat(back.mismatch(bytes(i))).as("block %d", i).isEqualTo(-1);
            }
            engine.awaitMoves();
            assertThat(promoted.get())
                    .as("blocks hit in DRAM were promoted to the device tier")
                    .isPositive();
        }
    }
}
