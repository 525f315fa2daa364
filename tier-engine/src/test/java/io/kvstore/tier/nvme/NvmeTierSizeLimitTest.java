package io.kvstore.tier.nvme;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.block.BlockRecord;
import io.kvstore.engine.TestBlocks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A write that fails in the kernel, for any user (the tmpfs disk-full test needs root to mount): a child
 * JVM runs under RLIMIT_FSIZE through util-linux {@code prlimit}, so its pwrite past 512 KiB fails with
 * EFBIG, as a failing device fails it with EIO or ENOSPC. The error must name the call and errno, the
 * tier must keep serving what it has, and nothing half-written may be indexed after a restart.
 * (Idea and first version from the NVMe helper's branch; adapted to this tier.)
 */
class NvmeTierSizeLimitTest {

    @TempDir
    Path dir;

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aWriteTheKernelRefusesIsAClearErrorAndTheTierKeepsServing() throws Exception {
        assumeTrue(new ProcessBuilder("prlimit", "--version").start().waitFor() == 0, "util-linux prlimit not found");
        Path data = dir.resolve("nvme");
        int block = SizeLimitedWriter.BLOCK;
        try (Arena arena = Arena.ofConfined();
                NvmeTier tier = new NvmeTier(SizeLimitedWriter.config(data))) {
            for (int id = 0; id < 2; id++) {
                MemorySegment src = TestBlocks.bytes(arena, id, block);
                tier.write(SizeLimitedWriter.record(id, src), src);
            }
        }
        // RocksDB unpacks its JNI library into a temporary file when it loads, which the limit forbids in the
        // child: unpack it here and let the child load it from java.library.path
        Path libDir = Files.createDirectories(dir.resolve("lib"));
        String libFile = org.rocksdb.util.Environment.getJniLibraryFileName("rocksdb");
        try (var in = org.rocksdb.RocksDB.class.getClassLoader().getResourceAsStream(libFile)) {
            Files.copy(in, libDir.resolve(libFile));
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(
                        "prlimit",
                        "--fsize=" + (512 * 1024),
                        java,
                        "-Xmx128m",
                        "--enable-native-access=ALL-UNNAMED",
                        "-Djava.library.path=" + libDir,
                        "-cp",
                        System.getProperty("java.class.path"),
                        SizeLimitedWriter.class.getName(),
                        data.toString(),
                        "2")
                .redirectError(dir.resolve("child.log").toFile())
                .start();
        List<String> lines = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8)
                .lines()
                .toList();
        assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String log = Files.readString(dir.resolve("child.log"));
        assertThat(lines)
                .as("child output; its log: %s", log)
                .contains("SERVED 0", "SERVED 1", "STILL 0", "STILL 1", "HOLDS 2");
        assertThat(lines)
                .as(log)
                .anySatisfy(l ->
                        assertThat(l).startsWith("FAILED 2 ").contains("pwrite").contains("File too large (errno 27)"));
        assertThat(lines)
                .as(log)
                .anySatisfy(l -> assertThat(l).startsWith("FAILED 3 ").contains("File too large"));

        try (Arena arena = Arena.ofConfined();
                NvmeTier tier = new NvmeTier(SizeLimitedWriter.config(data))) {
            assertThat(tier.recovered())
                    .extracting(BlockRecord::key)
                    .containsExactlyInAnyOrder(TestBlocks.key("m", 0), TestBlocks.key("m", 1));
            for (int id = 0; id < 2; id++) {
                MemorySegment dst = arena.allocate(block, 4096);
                tier.read(TestBlocks.key("m", id), dst);
                assertThat(dst.mismatch(TestBlocks.bytes(arena, id, block))).isEqualTo(-1);
            }
        }
    }
}
