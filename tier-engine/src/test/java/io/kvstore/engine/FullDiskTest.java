package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.kvstore.tier.nvme.NvmeTier;
import io.kvstore.tier.nvme.NvmeTierConfig;
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
 * The NVMe directory on a real, small filesystem (a 2 MiB tmpfs mounted by the test; skipped where it
 * cannot mount) that fills long before the tier's configured capacity: every acknowledged block stays
 * readable byte for byte (demotion fails, the block stays in DRAM), stores beyond that are refused with
 * {@link TierFullException}, and the failure is reported once as an event.
 */
class FullDiskTest {

    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    private Path mount;

    @BeforeEach
    void mountSmallTmpfs() throws Exception {
        mount = Files.createDirectories(dir.resolve("small"));
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mount.toString())
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
        if (mount != null) {
            new ProcessBuilder("umount", "-l", mount.toString()).start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void aFullDiskNeverLosesAnAcknowledgedBlock() throws Exception {
        AtomicInteger failing = new AtomicInteger();
        EngineEvents events = new EngineEvents() {
            @Override
            public void demotionFailing(TierId from, TierId to, String reason) {
                failing.incrementAndGet();
            }
        };
        // NVMe configured for 8 MiB in 1 MiB files, on 2 MiB of disk; DRAM 1 MiB
        List<BlockTier> tiers = List.of(
                new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 16L * BLOCK, 4L * BLOCK),
                new NvmeTier(new NvmeTierConfig(List.of(mount.resolve("nvme")), 8 << 20, 1 << 20, 1 << 20, 2)));
        List<BlockKey> acknowledged = new ArrayList<>();
        List<Long> ids = new ArrayList<>();
        try (Arena arena = Arena.ofShared();
                TierEngine engine = new TierEngine(
                        tiers,
                        Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.75, 0.5, false)),
                        Duration.ofMinutes(2),
                        events,
                        Clock.systemUTC())) {
            BlockHash parent = null;
            int refused = 0;
            for (long id = 1; id <= 200; id++) {
                BlockKey key = TestBlocks.key("full", id);
                try {
                    engine.put(key, parent, TestBlocks.bytes(arena, id, BLOCK));
                    acknowledged.add(key);
                    ids.add(id);
                    parent = key.hash();
                } catch (TierFullException full) {
                    refused++;
                }
                engine.awaitMoves();
            }
            // 2 MiB of disk and 1 MiB of DRAM hold far fewer than 200 blocks of 64 KiB
            assertThat(refused).isGreaterThan(0);
            assertThat(acknowledged.size()).isGreaterThan(16);
            MemorySegment dst = arena.allocate(BLOCK);
            for (int i = 0; i < acknowledged.size(); i++) {
                BlockKey key = acknowledged.get(i);
                long id = ids.get(i);
                engine.get(key, dst);
                assertThat(dst.asByteBuffer())
                        .as("block " + key)
                        .isEqualTo(TestBlocks.bytes(arena, id, BLOCK).asByteBuffer());
            }
            assertThat(failing.get()).isEqualTo(1);
            assertThatThrownBy(() -> engine.put(TestBlocks.key("full", 999), null, TestBlocks.bytes(arena, 999, BLOCK)))
                    .isInstanceOf(TierFullException.class);
        }
    }
}
