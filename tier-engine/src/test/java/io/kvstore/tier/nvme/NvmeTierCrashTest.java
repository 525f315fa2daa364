package io.kvstore.tier.nvme;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockRecord;
import io.kvstore.engine.TestBlocks;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a process that is storing blocks with SIGKILL mid-stream, reopens the tier, and checks that
 * every acknowledged block (that the writer had not deleted itself) reads back exactly and that any
 * other block the index holds also reads back exactly: nothing partial is ever visible.
 */
class NvmeTierCrashTest {

    private static final int BLOCK = 48 * 1024 + 100;

    @TempDir
    Path dir;

    static NvmeTierConfig config(Path dir) {
        return new NvmeTierConfig(List.of(dir), 16 << 20, 4 << 20, 1 << 20, 4);
    }

    @Test
    void acknowledgedBlocksSurviveSigkill() throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process child = new ProcessBuilder(
                        java,
                        "--enable-native-access=ALL-UNNAMED",
                        "-cp",
                        System.getProperty("java.class.path"),
                        NvmeCrashWriter.class.getName(),
                        dir.toString(),
                        String.valueOf(BLOCK))
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        Set<Long> acknowledged = new HashSet<>();
        long lastAck = 0;
        try (BufferedReader out =
                new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            String line;
            while ((line = out.readLine()) != null && System.nanoTime() < deadline) {
                if (line.startsWith("ACK ")) {
                    lastAck = Long.parseLong(line.substring(4));
                    acknowledged.add(lastAck);
                    if (lastAck >= 300) {
                        child.destroyForcibly(); // SIGKILL, while the writer is mid-stream
                        break;
                    }
                }
            }
        } finally {
            child.destroyForcibly();
            child.waitFor(30, TimeUnit.SECONDS);
        }
        assertThat(lastAck).as("acknowledged stores before the kill").isGreaterThanOrEqualTo(300);
        // the writer deleted blocks id-63..id-32 after each multiple of 64; those are allowed to be gone
        Set<Long> mustExist = new HashSet<>();
        for (long id : acknowledged) {
            long batchEnd = ((id + 63) / 64) * 64;
            boolean deletedByWriter = batchEnd <= lastAck && id % 64 >= 1 && id % 64 <= 32;
            if (!deletedByWriter) {
                mustExist.add(id);
            }
        }
        try (Arena arena = Arena.ofConfined();
                NvmeTier tier = new NvmeTier(config(dir))) {
            List<Long> recovered = new ArrayList<>();
            for (BlockRecord r : tier.recovered()) {
                recovered.add(r.key().hash().asLong());
            }
            assertThat(recovered).containsAll(mustExist);
            for (long id : recovered) {
                MemorySegment dst = arena.allocate(BLOCK);
                tier.read(TestBlocks.key("crash", id), dst);
                assertThat(dst.mismatch(TestBlocks.bytes(arena, id, BLOCK)))
                        .as("block %d", id)
                        .isEqualTo(-1);
            }
            System.out.printf(
                    "crash test: %d acknowledged, %d must exist, %d recovered, all exact%n",
                    acknowledged.size(), mustExist.size(), recovered.size());
        }
    }
}
