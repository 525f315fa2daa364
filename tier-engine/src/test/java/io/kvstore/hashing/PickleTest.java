package io.kvstore.hashing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link Pickle} against CPython's own {@code pickle.dumps(x, protocol=5)}, byte for byte. */
class PickleTest {

    private static final HexFormat HEX = HexFormat.of();

    /** Printed by CPython 3.11 (Debian's python3) for each value; see the live test for many more. */
    @Test
    void valuesPickleAsCpythonPicklesThem() {
        assertPickle(null, "80054e2e");
        assertPickle(0, "80054b002e");
        assertPickle(255, "80054bff2e");
        assertPickle(256, "80059504000000000000004d00012e");
        assertPickle(65535, "80059504000000000000004dffff2e");
        assertPickle(65536, "80059506000000000000004a000001002e");
        assertPickle(-1, "80059506000000000000004affffffff2e");
        assertPickle(Integer.MAX_VALUE, "80059506000000000000004affffff7f2e");
        assertPickle(1L << 31, "80059508000000000000008a0500000080002e");
        assertPickle(-(1L << 31) - 1, "80059508000000000000008a05ffffff7fff2e");
        assertPickle(Long.MAX_VALUE, "8005950b000000000000008a08ffffffffffffff7f2e");
        assertPickle(Long.MIN_VALUE, "8005950b000000000000008a0800000000000000802e");
        assertPickle("", "80059504000000000000008c00942e");
        assertPickle("a", "80059505000000000000008c0161942e");
        assertPickle("é", "80059506000000000000008c02c3a9942e");
        assertPickle("tenant-a", "8005950c000000000000008c0874656e616e742d61942e");
        assertPickle(new byte[0], "80059504000000000000004300942e");
        assertPickle(new byte[] {1}, "8005950500000000000000430101942e");
        assertPickle(List.of(), "8005292e");
        assertPickle(List.of(1), "80059505000000000000004b0185942e");
        // one-character strings are one object to CPython: the second is a memo reference
        assertPickle(List.of("a", "a"), "80059509000000000000008c016194680086942e");
        assertPickle(
                java.util.Arrays.asList(new byte[32], List.of(1, 2, 3, 4), null),
                "800595320000000000000043200000000000000000000000000000000000000000000000000000000000000000"
                        + "94284b014b024b034b0474944e87942e");
    }

    /**
     * Random values of every supported type and size (long strings and bytes that leave the frame,
     * tuples that span several 64 KiB frames, singletons met twice) pickled by Java and by the
     * {@code python3} on this machine. Skipped where there is no {@code python3}.
     */
    @Test
    void randomValuesPickleExactlyAsPythonDoes() throws Exception {
        Random random = new Random(12);
        List<Object> values = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            values.add(randomValue(random, 0));
        }
        values.add(List.of(new byte[32], tokens(random, 40_000), List.of("lora", List.of("img", -3))));
        values.add("x".repeat(70_000));
        values.add(List.of("é".repeat(40_000), new byte[65_536], "", "", new byte[1], new byte[1]));
        List<String> expected = python(values);
        assumeTrue(expected != null, "python3 is not available");
        for (int i = 0; i < values.size(); i++) {
            assertThat(HEX.formatHex(Pickle.dumps(values.get(i))))
                    .as(
                            "value %d: %s",
                            i,
                            String.valueOf(values.get(i))
                                    .substring(
                                            0,
                                            Math.min(
                                                    80,
                                                    String.valueOf(values.get(i))
                                                            .length())))
                    .isEqualTo(expected.get(i));
        }
    }

    private static void assertPickle(Object value, String hex) {
        assertThat(HEX.formatHex(Pickle.dumps(value))).isEqualTo(hex);
    }

    private static List<Object> tokens(Random random, int n) {
        List<Object> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(random.nextInt(4) == 0 ? random.nextInt(256) : random.nextInt(Integer.MAX_VALUE));
        }
        return out;
    }

    private static Object randomValue(Random random, int depth) {
        int kind = random.nextInt(depth > 2 ? 5 : 7);
        return switch (kind) {
            case 0 -> null;
            case 1 ->
                switch (random.nextInt(5)) {
                    case 0 -> random.nextInt(300);
                    case 1 -> random.nextInt(70_000);
                    case 2 -> random.nextInt();
                    case 3 -> random.nextLong() >> random.nextInt(64);
                    default -> -random.nextInt(1000);
                };
            case 2 -> randomString(random);
            case 3 -> {
                byte[] b = new byte[new int[] {0, 1, 16, 32, 255, 256, 1000}[random.nextInt(7)]];
                random.nextBytes(b);
                yield b;
            }
            case 4 -> List.of(random.nextBoolean() ? "a" : "", random.nextInt(3) == 0 ? "a" : "b");
            default -> {
                int n = new int[] {0, 1, 2, 3, 4, 17, depth == 0 ? 300 : 5}[random.nextInt(7)];
                List<Object> tuple = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    tuple.add(randomValue(random, depth + 1));
                }
                yield tuple;
            }
        };
    }

    private static String randomString(Random random) {
        int n = new int[] {0, 1, 1, 5, 255, 256, 300}[random.nextInt(7)];
        StringBuilder s = new StringBuilder();
        while (s.length() < n) {
            switch (random.nextInt(5)) {
                case 0 -> s.append((char) (0xA0 + random.nextInt(0x60)));
                case 1 -> s.append("\uD83D\uDE00");
                case 2 -> s.append((char) (0x400 + random.nextInt(0x100)));
                default -> s.append((char) ('a' + random.nextInt(26)));
            }
        }
        return s.toString();
    }

    /** Each value pickled by python3, as hex; null if python3 cannot be run. */
    private static List<String> python(List<Object> values) throws Exception {
        String script = """
                import json, pickle, sys
                def build(x):
                    if isinstance(x, dict):
                        if "s" in x: return x["s"]
                        if "b" in x: return bytes.fromhex(x["b"])
                        return tuple(build(e) for e in x["t"])
                    return x
                for line in sys.stdin:
                    print(pickle.dumps(build(json.loads(line)), protocol=pickle.HIGHEST_PROTOCOL).hex())
                """;
        Process process;
        try {
            process = new ProcessBuilder("python3", "-c", script)
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
        } catch (IOException e) {
            return null;
        }
        Thread feeder = Thread.ofVirtual().start(() -> {
            try (Writer in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8)) {
                for (Object value : values) {
                    StringBuilder json = new StringBuilder();
                    json(json, value);
                    in.write(json.append('\n').toString());
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        List<String> lines = new String(process.getInputStream().readAllBytes(), StandardCharsets.US_ASCII)
                .lines()
                .toList();
        feeder.join();
        assertThat(process.waitFor(120, TimeUnit.SECONDS)).isTrue();
        if (process.exitValue() != 0 || lines.size() != values.size()) {
            throw new AssertionError("python3 failed (exit " + process.exitValue() + ", " + lines.size() + " lines)");
        }
        return lines;
    }

    private static void json(StringBuilder out, Object value) {
        switch (value) {
            case null -> out.append("null");
            case Integer i -> out.append(i);
            case Long l -> out.append(l);
            case String s -> {
                out.append("{\"s\":\"");
                for (int i = 0; i < s.length(); i++) {
                    char c = s.charAt(i);
                    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
                        out.append(c);
                    } else {
                        out.append(String.format("\\u%04x", (int) c));
                    }
                }
                out.append("\"}");
            }
            case byte[] b -> out.append("{\"b\":\"").append(HEX.formatHex(b)).append("\"}");
            case List<?> list -> {
                out.append("{\"t\":[");
                for (int i = 0; i < list.size(); i++) {
                    out.append(i == 0 ? "" : ",");
                    json(out, list.get(i));
                }
                out.append("]}");
            }
            default -> throw new IllegalArgumentException(value.getClass().getName());
        }
    }
}
