package io.kvstore.block;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * The chained hash that identifies one full block of tokens: 8 bytes for {@code xxh3}, 32 for
 * {@code sha256_cbor}. Equal hashes within a namespace mean equal prefixes.
 */
public final class BlockHash implements Comparable<BlockHash> {

    private static final HexFormat HEX = HexFormat.of();

    private final byte[] bytes;
    private final int hashCode;

    private BlockHash(byte[] bytes) {
        this.bytes = bytes;
        this.hashCode = Arrays.hashCode(bytes);
    }

    /** Wraps a copy of {@code bytes}; 1 to 64 bytes. */
    public static BlockHash of(byte[] bytes) {
        if (bytes.length == 0 || bytes.length > 64) {
            throw new IllegalArgumentException("a block hash has 1 to 64 bytes, got " + bytes.length);
        }
        return new BlockHash(bytes.clone());
    }

    /** The 8 big-endian bytes of a 64-bit hash (xxh3). */
    public static BlockHash ofLong(long value) {
        byte[] b = new byte[8];
        for (int i = 7; i >= 0; i--) {
            b[i] = (byte) value;
            value >>>= 8;
        }
        return new BlockHash(b);
    }

    /** Parses lower- or upper-case hex, 2 to 128 digits. */
    public static BlockHash ofHex(String hex) {
        if (hex == null || hex.isEmpty() || hex.length() % 2 != 0 || hex.length() > 128) {
            throw new IllegalArgumentException("a block hash is 2 to 128 hex digits, got '" + hex + "'");
        }
        try {
            return new BlockHash(HEX.parseHex(hex));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("a block hash is hex digits only, got '" + hex + "'");
        }
    }

    public byte[] toBytes() {
        return bytes.clone();
    }

    public int length() {
        return bytes.length;
    }

    /** The first 8 bytes as a big-endian long (the whole value for xxh3). */
    public long asLong() {
        long v = 0;
        for (int i = 0; i < Math.min(8, bytes.length); i++) {
            v = (v << 8) | (bytes[i] & 0xFF);
        }
        return v;
    }

    public String hex() {
        return HEX.formatHex(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BlockHash other && hashCode == other.hashCode && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return hashCode;
    }

    @Override
    public int compareTo(BlockHash o) {
        return Arrays.compareUnsigned(bytes, o.bytes);
    }

    @Override
    public String toString() {
        return hex();
    }
}
