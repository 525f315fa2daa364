package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Runs the Python client's suite ({@code clients/python/tests}, pytest) as part of the build, so
 * {@code ./kvstore test} and CI run it: the tests start real kvstore services from this JVM's classpath
 * (handed over as {@code KVSTORE_TEST_JAVA} and {@code KVSTORE_TEST_CLASSPATH}) and drive the client, the
 * same-host data path and the engine adapters against them. Skipped, with the reason, only where Debian's
 * {@code python3-pytest} or {@code python3-numpy} is missing.
 */
class PythonClientTest {

    private static final Path REPO = Path.of("").toAbsolutePath().getParent();

    @Test
    void pythonClientSuitePassesAgainstRealServices() throws Exception {
        String python = python();
        assumeTrue(python != null, () -> {
            String reason = "no python3 with pytest and numpy (Debian: python3-pytest python3-numpy)";
            System.out.println("SKIPPED PythonClientTest: " + reason);
            return reason;
        });
        Path log = Files.createTempFile("kvstore-pytest", ".log");
        ProcessBuilder pb = new ProcessBuilder(
                        python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "clients/python/tests")
                .directory(REPO.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile());
        pb.environment()
                .put(
                        "KVSTORE_TEST_JAVA",
                        Path.of(System.getProperty("java.home"), "bin", "java").toString());
        pb.environment().put("KVSTORE_TEST_CLASSPATH", System.getProperty("java.class.path"));
        pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        Process p = pb.start();
        boolean finished = p.waitFor(25, TimeUnit.MINUTES);
        if (!finished) {
            p.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        System.out.println("pytest clients/python/tests:\n" + out);
        Files.deleteIfExists(log);
        assertThat(finished).as("pytest finished within 25 minutes").isTrue();
        assertThat(p.exitValue()).as("pytest exit status; its output:\n%s", out).isZero();
        assertThat(out).contains(" passed");
    }

    /** Debian's python3 first (the one the README names), then whatever python3 is on the PATH. */
    private static String python() throws IOException, InterruptedException {
        for (String candidate : new String[] {"/usr/bin/python3", "python3"}) {
            try {
                Process p = new ProcessBuilder(candidate, "-c", "import pytest, numpy")
                        .redirectErrorStream(true)
                        .start();
                p.getInputStream().readAllBytes();
                if (p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0) {
                    return candidate;
                }
            } catch (IOException e) {
                // not installed under that name
            }
        }
        return null;
    }
}
