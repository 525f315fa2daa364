package io.kvstore.hashing;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The subset of canonical CBOR (RFC 8949 section 4.2.1: shortest heads, definite lengths) that
 * vLLM's {@code cbor2.dumps(..., canonical=True)} produces for block-hash inputs: unsigned and
 * negative integers, byte strings, UTF-8 text, arrays (Python tuples and lists) and null (None).
 */
final class CanonicalCbor {

    static final int UNSIGNED = 0;
    static final int NEGATIVE = 1;
    static final int BYTES = 2;
    static final int TEXT = 3;
    static final int ARRAY = 4;
    static final byte NULL = (byte) 0xF6;

    private CanonicalCbor() {}

    /** Bytes taken by a head whose argument is {@code n}, read as unsigned. */
    static int headLength(long n) {
        if (Long.compareUnsigned(n, 24) < 0) {
            return 1;
        } else if (Long.compareUnsigned(n, 0xFF) <= 0) {
            return 2;
        } else if (Long.compareUnsigned(n, 0xFFFF) <= 0) {
            return 3;
        } else if (Long.compareUnsigned(n, 0xFFFF_FFFFL) <= 0) {
            return 5;
        }
        return 9;
    }

    /** Writes the head of major type {@code major} with argument {@code n} at {@code pos}; returns the next position. */
    static int writeHead(byte[] buf, int pos, int major, long n) {
        int length = headLength(n);
        int initial = major << 5;
        switch (length) {
            case 1 -> {
                buf[pos] = (byte) (initial | (int) n);
                return pos + 1;
            }
            case 2 -> buf[pos] = (byte) (initial | 24);
            case 3 -> buf[pos] = (byte) (initial | 25);
            case 5 -> buf[pos] = (byte) (initial | 26);
            default -> buf[pos] = (byte) (initial | 27);
        }
        for (int i = length - 1; i >= 1; i--) {
            buf[pos + i] = (byte) n;
            n >>>= 8;
        }
        return pos + length;
    }

    /** The canonical encoding of one extra-key value (null, String, Integer, Long, byte[] or List of these). */
    static byte[] encode(Object value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        write(out, value);
        return out.toByteArray();
    }

    private static void write(ByteArrayOutputStream out, Object value) {
        switch (value) {
            case null -> out.write(NULL);
            case String s -> {
                byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
                head(out, TEXT, utf8.length);
                out.writeBytes(utf8);
            }
            case Integer i -> integer(out, i);
            case Long l -> integer(out, l);
            case byte[] b -> {
                head(out, BYTES, b.length);
                out.writeBytes(b);
            }
            case List<?> list -> {
                head(out, ARRAY, list.size());
                for (Object element : list) {
                    write(out, element);
                }
            }
            default ->
                throw new IllegalArgumentException(
                        "no CBOR encoding for a " + value.getClass().getName());
        }
    }

    private static void integer(ByteArrayOutputStream out, long v) {
        if (v >= 0) {
            head(out, UNSIGNED, v);
        } else {
            head(out, NEGATIVE, ~v);
        }
    }

    private static void head(ByteArrayOutputStream out, int major, long n) {
        byte[] head = new byte[9];
        out.write(head, 0, writeHead(head, 0, major, n));
    }
}
