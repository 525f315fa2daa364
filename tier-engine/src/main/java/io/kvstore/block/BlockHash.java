package io.kvstore.block;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The chained hash that identifies one full block of tokens: 8 bytes for {@code xxh3}, 32 for
 * {@code sha256_cbor}. Equal hashes within a namespace mean equal prefixes.
 */
public final class BlockHash implements Comparable<BlockHash> {

    private static final HexFormat HEX = HexFormat.of();
    private static final SecureRandom SEEDS = new SecureRandom();
    private static final long HASH_KEY = SEEDS.nextLong();
    private static final long HASH_KEY_2 = SEEDS.nextLong();
    private static final VarHandle WORD = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    /**
     * Eight bytes as one big-endian load: {@link #lastLong} runs on every storing thread when KV events are on,
     * where a loop over the bytes cost a store 31-55 ns more in two alternating pairs of {@code bench/events.sh}
     * runs (docs/events.md).
     */
    private static final VarHandle BIG_WORD = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private final byte[] bytes;
    /**
     * {@link #keyedHash} of the bytes, computed on first use (0 until then, as {@code String} does): a
     * prompt's hashes are computed for all its blocks, but a lookup stops at the first one missing.
     */
    private int hashCode;

    private BlockHash(byte[] bytes) {
        this.bytes = bytes;
    }

    /**
     * A 32-bit hash of {@code bytes} keyed by a secret drawn once per process. Block hashes come from
     * clients, so a plain hash of their bytes could be chosen to collide and pile every block into one
     * bucket of the catalog's map or one counter of the eviction sketch; with a secret key a client
     * cannot compute collisions offline. Not a cryptographic MAC: a fast mix good against chosen inputs.
     */
    static int keyedHash(byte[] bytes) {
        long h = HASH_KEY ^ (bytes.length * 0x9E3779B97F4A7C15L);
        int i = 0;
        for (; i + 8 <= bytes.length; i += 8) {
            h = mix(h ^ (long) WORD.get(bytes, i));
        }
        long tail = 0;
        for (int shift = 0; i < bytes.length; i++, shift += 8) {
            tail |= (bytes[i] & 0xFFL) << shift;
        }
        h = mix(h ^ tail ^ HASH_KEY_2);
        return (int) (h ^ (h >>> 32));
    }

    /** The finaliser of SplitMix64 / MurmurHash3: every input bit affects every output bit. */
    private static long mix(long z) {
        z = (z ^ (z >>> 33)) * 0xFF51AFD7ED558CCDL;
        z = (z ^ (z >>> 33)) * 0xC4CEB9FE1A85EC53L;
        return z ^ (z >>> 33);
    }

    /** Wraps a copy of {@code bytes}; 1 to 64 bytes. */
    public static BlockHash of(byte[] bytes) {
        if (bytes.length == 0 || bytes.length > 64) {
            throw new IllegalArgumentException("a block hash has 1 to 64 bytes, got " + bytes.length);
        }
        return new BlockHash(bytes.clone());
    }

    /** Wraps a copy of {@code bytes[from, from + length)}; 1 to 64 bytes. */
    public static BlockHash of(byte[] bytes, int from, int length) {
        if (length <= 0 || length > 64) {
            throw new IllegalArgumentException("a block hash has 1 to 64 bytes, got " + length);
        }
        return new BlockHash(Arrays.copyOfRange(bytes, from, from + length));
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

    /** Copies the hash's bytes into {@code out} at {@code offset} (a wire format, without a copy per hash). */
    public void copyTo(byte[] out, int offset) {
        System.arraycopy(bytes, 0, out, offset, bytes.length);
    }

    public int length() {
        return bytes.length;
    }

    /** The first 8 bytes as a big-endian long (the whole value for xxh3). */
    public long asLong() {
        return bytes.length >= 8 ? (long) BIG_WORD.get(bytes, 0) : shortValue();
    }

    /**
     * The last 8 bytes as a big-endian long (all of them when shorter): vLLM's integer form of a block hash
     * in KV events, {@code int.from_bytes(hash[-8:], "big")}.
     */
    public long lastLong() {
        return bytes.length >= 8 ? (long) BIG_WORD.get(bytes, bytes.length - 8) : shortValue();
    }

    /** All the bytes of a hash shorter than 8 as a big-endian long: its first and its last 8 bytes alike. */
    private long shortValue() {
        long v = 0;
        for (byte b : bytes) {
            v = (v << 8) | (b & 0xFF);
        }
        return v;
    }

    public String hex() {
        return HEX.formatHex(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BlockHash other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        int h = hashCode;
        if (h == 0) {
            // racy but safe: every thread computes the same value from final bytes
            h = keyedHash(bytes);
            hashCode = h;
        }
        return h;
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
