package io.kvstore.hashing;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The subset of canonical CBOR (RFC 8949 §4.2.1, as Python's {@code cbor2.dumps(canonical=True)} writes
 * it) that vLLM's block-hash input uses: unsigned and negative integers in their shortest form, byte
 * strings, text strings, arrays and null.
 */
final class CanonicalCbor {

    private final ByteArrayOutputStream out;

    CanonicalCbor(int expectedSize) {
        this.out = new ByteArrayOutputStream(expectedSize);
    }

    CanonicalCbor head(int majorType, long value) {
        int major = majorType << 5;
        if (value < 24) {
            out.write(major | (int) value);
        } else if (value < 0x100) {
            out.write(major | 24);
            out.write((int) value);
        } else if (value < 0x10000) {
            out.write(major | 25);
            writeBigEndian(value, 2);
        } else if (value < 0x1_0000_0000L) {
            out.write(major | 26);
            writeBigEndian(value, 4);
        } else {
            out.write(major | 27);
            writeBigEndian(value, 8);
        }
        return this;
    }

    private void writeBigEndian(long value, int bytes) {
        for (int i = bytes - 1; i >= 0; i--) {
            out.write((int) (value >>> (8 * i)));
        }
    }

    CanonicalCbor integer(long value) {
        return value >= 0 ? head(0, value) : head(1, -1 - value);
    }

    CanonicalCbor bytes(byte[] value) {
        head(2, value.length);
        out.writeBytes(value);
        return this;
    }

    CanonicalCbor text(String value) {
        byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
        head(3, utf8.length);
        out.writeBytes(utf8);
        return this;
    }

    CanonicalCbor array(int length) {
        return head(4, length);
    }

    CanonicalCbor nil() {
        out.write(0xF6);
        return this;
    }

    /** Encodes a string, an integer, or a list of those (recursively). */
    CanonicalCbor value(Object value) {
        return switch (value) {
            case null -> nil();
            case String s -> text(s);
            case Integer i -> integer(i);
            case Long l -> integer(l);
            case byte[] b -> bytes(b);
            case List<?> list -> {
                array(list.size());
                list.forEach(this::value);
                yield this;
            }
            default -> throw new IllegalArgumentException("cannot encode " + value.getClass().getSimpleName());
        };
    }

    byte[] toByteArray() {
        return out.toByteArray();
    }
}
