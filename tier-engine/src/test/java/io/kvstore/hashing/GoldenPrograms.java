package io.kvstore.hashing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Runs a golden-vector program of docs/hashing with Debian's Python and reads what it prints, so a test can
 * hold Java's hashes against the program itself and not only against vectors copied from it once.
 */
final class GoldenPrograms {

    private static final Path DOCS = Path.of("").toAbsolutePath().getParent().resolve("docs/hashing");

    /** One case the program printed: its title line, then per scheme name the block hashes, in order. */
    record Printed(String title, Map<String, List<String>> hashes) {}

    private GoldenPrograms() {}

    /**
     * What {@code program} prints, case by case; skips the calling test, with the reason, where no python3
     * here imports {@code modules} ({@code ./kvstore deps} installs them).
     */
    static List<Printed> run(String program, String... modules) throws IOException, InterruptedException {
        String python = python(modules);
        assumeTrue(
                python != null,
                () -> "no python3 here imports " + String.join(", ", modules)
                        + " (Debian: python3-cbor2 python3-xxhash; ./kvstore deps installs them)");
        Process p = new ProcessBuilder(python, DOCS.resolve(program).toString())
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException(program + " failed:\n" + out);
        }
        List<Printed> cases = new ArrayList<>();
        for (String line : out.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            if (!line.startsWith("  ")) {
                cases.add(new Printed(line, new LinkedHashMap<>()));
                continue;
            }
            String[] words = line.strip().split(" ");
            if (cases.isEmpty()) {
                throw new IllegalStateException(program + " printed hashes before any case: " + line);
            }
            cases.getLast().hashes().put(words[0], Arrays.asList(words).subList(1, words.length));
        }
        return cases;
    }

    /** Debian's python3 first, then whatever python3 is on the PATH, if it imports every module. */
    private static @Nullable String python(String... modules) throws InterruptedException {
        for (String candidate : new String[] {"/usr/bin/python3", "python3"}) {
            try {
                Process p = new ProcessBuilder(candidate, "-c", "import " + String.join(", ", modules))
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
