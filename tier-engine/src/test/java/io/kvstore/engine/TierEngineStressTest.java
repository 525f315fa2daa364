package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.EmulatedDeviceMemoryProvider;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Eight threads put, look up, read, pin, evict, delete and switch policies over a shared key space
 * for a bounded time. Every byte read must be the block's own bytes; at the end every block the
 * catalog reports reads back exactly and no tier is over capacity.
 */
class TierEngineStressTest {

    private static final int THREADS = 8;
    private static final int KEYS = 600;
    private static final int BLOCK = 8 * 1024;
    private static final long RUN_NANOS = TimeUnit.SECONDS.toNanos(3);

    @org.junit.jupiter.api.io.TempDir
    java.nio.file.Path dir;

    @Test
    void concurrentOperationsLoseAndCorruptNothing() throws Exception {
        stress(
                List.of(
                        new MemoryTier(TierId.HBM, new EmulatedDeviceMemoryProvider(), 64L * BLOCK, 16L * BLOCK),
                        new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 256L * BLOCK, 16L * BLOCK)),
                Map.of(
                        TierId.HBM,
                        new TierSettings(EvictionPolicyKind.LRU, 0.9, 0.7, true),
                        TierId.DRAM,
                        new TierSettings(EvictionPolicyKind.PREFIX_AWARE, 0.9, 0.7, false)));
    }

    /** The same over DRAM and a real NVMe tier: batched demotion, group commits and NVMe reads under load. */
    @Test
    void concurrentOperationsOverNvmeLoseAndCorruptNothing() throws Exception {
        stress(
                List.of(
                        new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 64L * BLOCK, 16L * BLOCK),
                        new io.kvstore.tier.nvme.NvmeTier(new io.kvstore.tier.nvme.NvmeTierConfig(
                                List.of(dir), 2L << 20, 1L << 20, 128L * 1024, 4))),
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.8, 0.5, true)));
    }

    private void stress(List<? extends io.kvstore.tier.BlockTier> tiers, Map<TierId, TierSettings> settings)
            throws Exception {
        long seed = System.nanoTime();
        System.out.println("TierEngineStressTest seed " + seed + " tiers "
                + tiers.stream().map(t -> t.id()).toList());
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        AtomicLong reads = new AtomicLong();
        AtomicLong puts = new AtomicLong();
        try (Arena arena = Arena.ofShared();
                TierEngine engine =
                        new TierEngine(tiers, settings, Duration.ofMillis(200), EngineEvents.NONE, Clock.systemUTC())) {
            // every key's bytes are fixed by its id, prepared once
            List<MemorySegment> contents = new ArrayList<>();
            for (int id = 0; id < KEYS; id++) {
                contents.add(TestBlocks.bytes(arena, id, BLOCK));
            }
            CountDownLatch done = new CountDownLatch(THREADS);
            long deadline = System.nanoTime() + RUN_NANOS;
            for (int t = 0; t < THREADS; t++) {
                SplittableRandom random = new SplittableRandom(seed + t);
                Thread.ofPlatform().name("stress-" + t).start(() -> {
                    try (Arena local = Arena.ofConfined()) {
                        MemorySegment dst = local.allocate(BLOCK);
                        while (System.nanoTime() < deadline) {
                            int id = random.nextInt(KEYS);
                            BlockKey key = key(id);
                            int op = random.nextInt(100);
                            try {
                                if (op < 35) {
                                    engine.put(key, id % 8 == 0 ? null : BlockHash.ofLong(id - 1), contents.get(id));
                                    puts.incrementAndGet();
                                } else if (op < 70) {
                                    engine.get(key, dst);
                                    reads.incrementAndGet();
                                    if (dst.mismatch(contents.get(id)) != -1) {
                                        failures.add(new AssertionError("block " + id + " read back wrong bytes"));
                                    }
                                } else if (op < 80) {
                                    List<BlockHash> chain = new ArrayList<>();
                                    for (int i = id - id % 8; i < id - id % 8 + 8; i++) {
                                        chain.add(BlockHash.ofLong(i));
                                    }
                                    engine.lookup("stress", chain);
                                } else if (op < 85) {
                                    engine.pin(List.of(key));
                                    Thread.onSpinWait();
                                    engine.unpin(List.of(key));
                                } else if (op < 90) {
                                    Lease lease = engine.lease(List.of(key), Duration.ofMillis(50));
                                    if (random.nextBoolean()) {
                                        engine.release(lease.id());
                                    }
                                } else if (op < 95) {
                                    List<TierId> ids = List.copyOf(engine.tierIds());
                                    engine.evict(ids.get(random.nextInt(ids.size())), 0, 2);
                                } else if (op < 99 || random.nextInt(50) != 0) {
                                    // deletes, and now and then (about 1 in 5,000 operations) a policy switch
                                    engine.delete(key);
                                } else {
                                    EvictionPolicyKind[] kinds = EvictionPolicyKind.values();
                                    engine.setPolicy(TierId.DRAM, kinds[random.nextInt(kinds.length)]);
                                }
                            } catch (BlockNotFoundException | TierFullException expected) {
                                // a block evicted or deleted by another thread; a tier held by pins and leases
                            } catch (BlockHeldException pinnedOrLeased) {
                                // a delete of a block another thread pinned or leased
                            }
                        }
                    } catch (Throwable t2) {
                        failures.add(t2);
                    } finally {
                        done.countDown();
                    }
                });
            }
            assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
            engine.awaitMoves();
            assertThat(failures).isEmpty();
            assertThat(reads.get()).isPositive();
            assertThat(puts.get()).isPositive();

            for (TierStats s : engine.stats()) {
                assertThat(s.usedBytes()).isLessThanOrEqualTo(s.capacityBytes());
            }
            MemorySegment dst = arena.allocate(BLOCK);
            int resident = 0;
            for (int id = 0; id < KEYS; id++) {
                var entry = engine.info(key(id));
                if (entry != null && entry.resident()) {
                    engine.get(key(id), dst);
                    assertThat(dst.mismatch(contents.get(id)))
                            .as("block %d", id)
                            .isEqualTo(-1);
                    resident++;
                }
            }
            int tierBlocks = engine.stats().stream().mapToInt(TierStats::blocks).sum();
            assertThat(tierBlocks).isGreaterThanOrEqualTo(resident);
            System.out.printf(
                    "stress: %d puts, %d reads, %d blocks resident at the end%n", puts.get(), reads.get(), resident);
        }
    }

    private static BlockKey key(int id) {
        return new BlockKey("stress", BlockHash.ofLong(id));
    }
}
