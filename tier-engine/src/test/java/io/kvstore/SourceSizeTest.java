package io.kvstore;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No class in tier-engine grows past {@value #LIMIT} lines unless its Javadoc says why, in a paragraph
 * that starts "Why it is long:". A long class is where a newcomer cannot see where a change belongs; the
 * paragraph makes the author argue for it.
 */
class SourceSizeTest {

    private static final int LIMIT = 400;

    @Test
    void longClassesSayWhyTheyAreLong() throws IOException {
        Path sources = Path.of("src/main/java");
        List<String> unexplained = new ArrayList<>();
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                List<String> lines = Files.readAllLines(file);
                if (lines.size() > LIMIT && !String.join("\n", lines).contains("Why it is long:")) {
                    unexplained.add(sources.relativize(file) + " (" + lines.size() + " lines)");
                }
            }
        }
        assertThat(unexplained)
                .as("classes over %d lines without a 'Why it is long:' paragraph", LIMIT)
                .isEmpty();
    }

    @Test
    void theCheckSeesTheSources() throws IOException {
        try (Stream<Path> files = Files.walk(Path.of("src/main/java/io/kvstore/engine"))) {
            assertThat(files.filter(f -> f.toString().endsWith("TierEngine.java")))
                    .hasSize(1);
        }
    }
}
