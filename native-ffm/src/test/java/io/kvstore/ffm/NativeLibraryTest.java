package io.kvstore.ffm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLibraryTest {

    private static void gcc(Path dir, String... args) throws Exception {
        Process p = new ProcessBuilder(List.of(args))
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
    }

    private static boolean gccPresent() {
        try {
            return new ProcessBuilder("gcc", "--version").start().waitFor() == 0;
        } catch (Exception e) {
            return false;
        }
    }

    @Test
    void aLibraryWhoseDependencyIsMissingIsReportedWithTheLoadersReason(@TempDir Path dir) throws Exception {
        assumeTrue(gccPresent(), "skipped: gcc not on PATH");
        // libouter.so needs libinner.so (found through RUNPATH $ORIGIN), which is then deleted
        Files.writeString(dir.resolve("inner.c"), "int inner(void) { return 42; }\n");
        Files.writeString(dir.resolve("outer.c"), "int inner(void);\nint outer(void) { return inner(); }\n");
        gcc(dir, "gcc", "-shared", "-fPIC", "-o", "libinner.so", "inner.c");
        gcc(dir, "gcc", "-shared", "-fPIC", "-o", "libouter.so", "outer.c", "-L.", "-linner", "-Wl,-rpath,$ORIGIN");
        Files.delete(dir.resolve("libinner.so"));
        Path outer = dir.resolve("libouter.so");

        assertThatThrownBy(() -> NativeLibrary.load("libouter", List.of(dir), List.of("libouter.so")))
                .isInstanceOf(LibraryUnavailableException.class)
                .hasMessageStartingWith("libouter at " + outer + " could not be loaded: ")
                .hasMessageContaining("libinner.so: cannot open shared object file");
        assertThat(NativeLibrary.loaderError(outer))
                .hasValueSatisfying(m -> assertThat(m).contains("libinner.so"));
        assertThat(NativeLibrary.loaderError(Path.of("libc.so.6")))
                .as("a library that loads has no loader error")
                .isEmpty();
    }
}
