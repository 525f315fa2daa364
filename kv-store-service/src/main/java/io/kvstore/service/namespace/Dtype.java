package io.kvstore.service.namespace;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The element types a KV cache is stored in, by the names engines use (torch's), with their width. */
public enum Dtype {
    FLOAT32(4, "float32", "fp32"),
    FLOAT16(2, "float16", "fp16", "half"),
    BFLOAT16(2, "bfloat16", "bf16"),
    FLOAT8_E4M3(1, "float8_e4m3fn", "float8_e4m3", "fp8_e4m3", "fp8"),
    FLOAT8_E5M2(1, "float8_e5m2", "fp8_e5m2"),
    INT8(1, "int8"),
    UINT8(1, "uint8");

    private final int bytes;
    private final String[] names;

    Dtype(int bytes, String... names) {
        this.bytes = bytes;
        this.names = names;
    }

    public int bytes() {
        return bytes;
    }

    /** The canonical wire name (torch's). */
    public String wireName() {
        return names[0];
    }

    /** Parses any accepted name, case-insensitively, listing the accepted ones otherwise. */
    public static Dtype parse(String name) {
        String n = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        for (Dtype d : values()) {
            for (String candidate : d.names) {
                if (candidate.equals(n)) {
                    return d;
                }
            }
        }
        throw new IllegalArgumentException("unknown dtype '" + name + "'; expected one of "
                + Arrays.stream(values()).map(Dtype::wireName).collect(Collectors.joining(", ")));
    }
}
