package io.kvstore.service.local;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * The binary frames of the local control socket (docs/local-data-path.md has the layout): every frame is a
 * little-endian {@code u32} length of what follows, a {@code u8} kind, then its fields; numbers are
 * little-endian, strings a {@code u32} byte count and UTF-8, block hashes a {@code u8} byte count and the raw
 * bytes (no hex, no JSON). A request's kind names the call; an answer's kind is {@link #OK} or {@link #ERROR}.
 */
public final class ControlFrames {

    /**
     * First frame of a connection: {@code str token} (empty: none), optionally {@code str clientId} (the same on
     * all of one client's connections) -> {@code str regionId}, and {@code u8 1} when a client id was given:
     * that client's reservations are fenced (their slots are no one else's while it is connected).
     */
    public static final byte HELLO = 1;
    /**
     * {@code str ns, i64 timeoutSeconds (-1: default), u32 n, n x (hash, parent hash: empty for none)}; the answer
     * ends, on a connection whose HELLO named its client, with {@code u8 writerChecksums}.
     */
    public static final byte RESERVE = 2;
    /** {@code str ns, str reservationId, u32 n, n x (hash, u32 crc32c)}. */
    public static final byte COMMIT = 3;
    /** {@code str reservationId}. */
    public static final byte CANCEL = 4;
    /** {@code str ns, i64 timeoutSeconds (-1: default), u32 n, n x hash}. */
    public static final byte LEASE = 5;
    /** {@code str leaseId}. */
    public static final byte RELEASE = 6;
    /** An answer with the call's results. */
    public static final byte OK = 0;
    /** A refusal: {@code u16 status, str title, str detail, str field (empty: none)}, as problem JSON has them. */
    public static final byte ERROR = (byte) 0xFF;

    private static final HexFormat HEX = HexFormat.of();

    private ControlFrames() {}

    /** A frame did not have the fields its kind needs (or had bytes left over). */
    public static final class MalformedFrameException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public MalformedFrameException(String message) {
            super(message);
        }
    }

    /** Reads the fields of one frame's body. */
    public static final class Reader {
        private final ByteBuffer in;

        public Reader(ByteBuffer in) {
            this.in = in.order(ByteOrder.LITTLE_ENDIAN);
        }

        public byte kind() {
            return get(() -> in.get());
        }

        public long i64() {
            return get(in::getLong);
        }

        public int u16() {
            return Short.toUnsignedInt(get(in::getShort));
        }

        public long u32() {
            return Integer.toUnsignedLong(get(in::getInt));
        }

        /** A count of items each at least {@code minBytes} long: never more than the bytes left could hold. */
        public int count(int minBytes) {
            long n = u32();
            if (n * Math.max(1, minBytes) > in.remaining()) {
                throw new MalformedFrameException("a count of " + n + " items is more than the frame holds");
            }
            return (int) n;
        }

        public String str() {
            int n = count(1);
            byte[] b = new byte[n];
            in.get(b);
            return new String(b, StandardCharsets.UTF_8);
        }

        /** A block hash as the JSON API spells it (lower-case hex), or null for an empty one. */
        public @Nullable String hash() {
            int n = Byte.toUnsignedInt(kind());
            if (n > in.remaining()) {
                throw new MalformedFrameException("a hash of " + n + " bytes is more than the frame holds");
            }
            if (n == 0) {
                return null;
            }
            byte[] b = new byte[n];
            in.get(b);
            return HEX.formatHex(b);
        }

        /** Whether fields follow (an optional field at a frame's end). */
        public boolean hasRemaining() {
            return in.hasRemaining();
        }

        public void end() {
            if (in.hasRemaining()) {
                throw new MalformedFrameException(in.remaining() + " bytes left over after the frame's fields");
            }
        }

        private <T> T get(java.util.function.Supplier<T> field) {
            try {
                return field.get();
            } catch (BufferUnderflowException e) {
                throw new MalformedFrameException("the frame ends before its fields do");
            }
        }
    }

    /** Writes one frame: {@link #finish()} fills in its length. */
    public static final class Writer {
        private ByteBuffer out = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);

        public Writer(byte kind) {
            out.putInt(0).put(kind);
        }

        public Writer i64(long v) {
            room(8).putLong(v);
            return this;
        }

        public Writer u32(long v) {
            room(4).putInt((int) v);
            return this;
        }

        public Writer u16(int v) {
            room(2).putShort((short) v);
            return this;
        }

        public Writer u8(int v) {
            room(1).put((byte) v);
            return this;
        }

        public Writer str(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            room(4 + b.length).putInt(b.length).put(b);
            return this;
        }

        /** A block hash from its hex spelling; empty for null. */
        public Writer hash(@Nullable String hex) {
            byte[] b = hex == null ? new byte[0] : HEX.parseHex(hex);
            room(1 + b.length).put((byte) b.length).put(b);
            return this;
        }

        /** The frame, length first, ready to send. */
        public ByteBuffer finish() {
            out.putInt(0, out.position() - 4);
            return out.flip();
        }

        private ByteBuffer room(int n) {
            if (out.remaining() < n) {
                ByteBuffer bigger = ByteBuffer.allocate(Math.max(out.capacity() * 2, out.position() + n))
                        .order(ByteOrder.LITTLE_ENDIAN);
                out = bigger.put(out.flip());
            }
            return out;
        }
    }
}
