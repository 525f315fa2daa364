package io.kvstore.tier.memory;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SharedFileMemoryProviderTest {

    @TempDir
    Path dir;

    @Test
    void regionIsAnOwnerOnlyFileOtherMappingsSeeAndIsDeletedOnClose() throws Exception {
        var provider = new SharedFileMemoryProvider(dir, null);
        try (MemoryRegion region = provider.allocate(1 << 20)) {
            Path file = provider.file();
            assertThat(file)
                    .isEqualTo(dir.resolve(
                            "kvstore-dram-" + ProcessHandle.current().pid()));
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
                    .isEqualTo("rw-------");
            assertThat(Files.size(file)).isEqualTo(1 << 20);
            region.segment().set(ValueLayout.JAVA_BYTE, 12345, (byte) 0x5A);
            // what another process mapping the file sees: the bytes written through the region
            try (var ch = java.nio.channels.FileChannel.open(file)) {
                var buf = java.nio.ByteBuffer.allocate(1);
                ch.read(buf, 12345);
                assertThat(buf.get(0)).isEqualTo((byte) 0x5A);
            }
        }
        assertThat(Files.list(dir)).isEmpty();
    }

    @Test
    void everyPageOfTheFileIsAllocatedAtTheStart() throws Exception {
        var provider = new SharedFileMemoryProvider(dir, null);
        long bytes = 8L << 20;
        try (MemoryRegion ignored = provider.allocate(bytes)) {
            // not sparse: the memory file system gave every page now (a short one refuses here, not with SIGBUS later)
            Process stat = new ProcessBuilder(
                            "stat", "-c", "%b %B", provider.file().toString())
                    .redirectErrorStream(true)
                    .start();
            String[] blocks =
                    new String(stat.getInputStream().readAllBytes()).trim().split(" ");
            assertThat(stat.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(Long.parseLong(blocks[0]) * Long.parseLong(blocks[1])).isGreaterThanOrEqualTo(bytes);
        }
    }

    @Test
    void aGroupGetsReadAndWrite() throws Exception {
        String group = Files.readAttributes(dir, java.nio.file.attribute.PosixFileAttributes.class)
                .group()
                .getName();
        var provider = new SharedFileMemoryProvider(dir, group);
        try (MemoryRegion region = provider.allocate(64 * 1024)) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(provider.file())))
                    .isEqualTo("rw-rw----");
            assertThat(region.segment().byteSize()).isEqualTo(64 * 1024);
        }
    }

    @Test
    void filesOfProcessesThatNoLongerRunAreDeletedAtStart() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        assertThat(gone.waitFor(30, TimeUnit.SECONDS)).isTrue();
        Path stale = Files.createFile(dir.resolve("kvstore-dram-" + gone.pid()));
        Path alive = Files.createFile(dir.resolve(
                "kvstore-dram-" + ProcessHandle.current().parent().orElseThrow().pid()));
        var provider = new SharedFileMemoryProvider(dir, null);
        try (MemoryRegion ignored = provider.allocate(4096)) {
            assertThat(stale).doesNotExist();
            assertThat(alive).exists();
        }
    }

    @Test
    void anUnusableDirectoryIsReportedUnavailable() {
        var provider = new SharedFileMemoryProvider(dir.resolve("missing"), null);
        assertThat(provider.availability().available()).isFalse();
        assertThat(provider.availability().detail()).contains("not a directory");
    }
}
