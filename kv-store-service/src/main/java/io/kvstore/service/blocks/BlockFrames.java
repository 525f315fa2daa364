package io.kvstore.service.blocks;

import io.kvstore.block.BlockHash;
import io.kvstore.service.error.ClientGoneException;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.PayloadTooLargeException;
import io.kvstore.service.error.RequestTimeoutException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The binary framing of block batches, used by store ({@code PUT .../blocks}) and fetch
 * ({@code POST .../blocks:fetch}) alike. A body is frames back to back until its end; each frame is
 *
 * <pre>
 *   u8  hashLen     length of the block's hash (32 for sha256_cbor, 8 for xxh3)
 *   ..  hash        hashLen bytes
 *   u8  parentLen   0 for the first block of a prompt, else hashLen
 *   ..  parent      parentLen bytes: the hash of the block before it
 *   u32 length      big-endian; must equal the namespace's block size in bytes
 *   ..  bytes       the block
 * </pre>
 *
 * In a fetch answer a block that could not be sent (it failed its checksum, or was lost, after the answer
 * began) is a <em>missing frame</em>: its header with {@code length = 0xFFFFFFFF} and no bytes. A fetch
 * answer is therefore always complete and parseable; the client sees which block is missing and can
 * recompute it. Store bodies never carry missing frames.
 *
 * <p>Block bytes go between the stream and off-heap memory through one small reusable chunk, so a batch
 * is never held on the heap whatever its size. Reading a store body, the first {@link #CHUNK} bytes of a
 * block are staged before its tier slot is taken and the rest must follow within a frame timeout, so a
 * client trickling its body holds no slot for long; a whole-request deadline bounds the upload.
 */
public final class BlockFrames {

    /** Bytes copied per step between a stream and off-heap memory. */
    static final int CHUNK = 64 * 1024;

    /** The {@code length} of a missing frame in a fetch answer: no bytes follow. */
    public static final int MISSING = 0xFFFF_FFFF;

    private BlockFrames() {}

    /** One frame's header. */
    public record Header(BlockHash hash, BlockHash parent, int length) {

        /** A fetch answer's frame for a block that could not be sent ({@link #MISSING} as length, no bytes). */
        public boolean missing() {
            return length == MISSING;
        }

        /** Bytes of the header on the wire. */
        public int wireBytes() {
            return 1 + hash.length() + 1 + (parent == null ? 0 : parent.length()) + 4;
        }
    }

    /**
     * Reads frames from a request body, counting bytes and frames against their limits and holding the
     * body to its deadlines. A read that times out becomes {@link RequestTimeoutException} (408), any other
     * failed read {@link ClientGoneException}: the client went away.
     */
    public static final class Reader {

        private final InputStream in;
        private final long limit;
        private final int maxFrames;
        private final long deadlineNanos;
        private final long frameTimeoutNanos;
        private final byte[] chunk = new byte[CHUNK];
        private long consumed;
        private int frame = -1;
        private MemorySegment staged;
        private long stagedBytes;

        /** A reader without deadlines or a frame limit (for tests and trusted streams). */
        public Reader(InputStream in, long limit) {
            this(in, limit, Integer.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE);
        }

        /**
         * @param deadlineNanos {@link System#nanoTime()} by which the whole body must have arrived
         * @param frameTimeoutNanos how long a block's bytes may take once its slot is taken
         */
        public Reader(InputStream in, long limit, int maxFrames, long deadlineNanos, long frameTimeoutNanos) {
            this.in = in;
            this.limit = limit;
            this.maxFrames = maxFrames;
            this.deadlineNanos = deadlineNanos;
            this.frameTimeoutNanos = frameTimeoutNanos;
        }

        /** The index of the frame being read (0-based), for error messages. */
        public int frame() {
            return frame;
        }

        /** The next frame's header, or null at the end of the body. */
        public Header next(int hashBytes, int blockBytes) throws IOException {
            return next(hashBytes, blockBytes, false);
        }

        /**
         * The next frame of a fetch's answer, which may be a missing frame ({@link Header#missing()}: no block
         * bytes follow), or null at the end.
         */
        public Header nextAnswer(int hashBytes, int blockBytes) throws IOException {
            return next(hashBytes, blockBytes, true);
        }

        private Header next(int hashBytes, int blockBytes, boolean missingAllowed) throws IOException {
            staged = null;
            stagedBytes = 0;
            int first = read();
            if (first < 0) {
                return null;
            }
            frame++;
            if (frame >= maxFrames) {
                throw new PayloadTooLargeException("the body has more than " + maxFrames
                        + " frames (kvstore.limits.max-frames-per-upload); send the rest in another request");
            }
            count(1);
            if (first != hashBytes) {
                throw invalid("hashLen is " + first + " but this namespace's hashes have " + hashBytes + " bytes");
            }
            BlockHash hash = BlockHash.of(readBytes(first));
            int parentLen = readByte();
            if (parentLen != 0 && parentLen != hashBytes) {
                throw invalid("parentLen is " + parentLen + "; expected 0 (first block) or " + hashBytes);
            }
            BlockHash parent = parentLen == 0 ? null : BlockHash.of(readBytes(parentLen));
            if (hash.equals(parent)) {
                throw invalid("the block's parent is the block itself (" + hash.hex() + ")");
            }
            int length = (readByte() << 24) | (readByte() << 16) | (readByte() << 8) | readByte();
            if (length != blockBytes && !(missingAllowed && length == MISSING)) {
                throw invalid("length is " + Integer.toUnsignedString(length) + " but this namespace's blocks have "
                        + blockBytes + " bytes");
            }
            return new Header(hash, parent, length);
        }

        /**
         * Reads the start of the current frame's block (up to {@link #CHUNK} bytes) into {@code scratch}
         * before any tier slot is taken for it; {@link #readBlock} then starts with these bytes.
         */
        public void stage(MemorySegment scratch) throws IOException {
            long n = Math.min(CHUNK, scratch.byteSize());
            fill(scratch.asSlice(0, n), deadlineNanos);
            staged = scratch;
            stagedBytes = n;
        }

        /** Reads the current frame's {@code dst.byteSize()} block bytes into {@code dst} (after what was staged). */
        public void readBlock(MemorySegment dst) throws IOException {
            long from = 0;
            if (staged != null) {
                if (dst.address() != staged.address()) {
                    MemorySegment.copy(staged, 0, dst, 0, Math.min(stagedBytes, dst.byteSize()));
                }
                from = stagedBytes;
                staged = null;
                stagedBytes = 0;
            }
            if (from < dst.byteSize()) {
                fill(dst.asSlice(from), Math.min(deadlineNanos, saturatedAdd(System.nanoTime(), frameTimeoutNanos)));
            }
        }

        private void fill(MemorySegment dst, long byNanos) throws IOException {
            long size = dst.byteSize();
            count(size);
            long done = 0;
            while (done < size) {
                int n;
                try {
                    if (in instanceof ServletInputStream servlet) {
                        // straight from the connector's buffer into off-heap memory (Servlet 6.1), no heap chunk
                        // (only the returned count is trusted: Tomcat leaves the buffer flipped after a read)
                        n = servlet.read(dst.asSlice(done).asByteBuffer());
                    } else {
                        n = in.read(chunk, 0, (int) Math.min(chunk.length, size - done));
                        if (n > 0) {
                            MemorySegment.copy(chunk, 0, dst, ValueLayout.JAVA_BYTE, done, n);
                        }
                    }
                } catch (IOException e) {
                    throw readFailed(e);
                }
                if (n < 0) {
                    throw invalid("the body ends after " + done + " of the block's " + size + " bytes");
                }
                done += n;
                if (done < size && System.nanoTime() - byNanos > 0) {
                    throw late();
                }
            }
        }

        private RequestTimeoutException late() {
            return new RequestTimeoutException("frame " + frame + ": the block's bytes arrive too slowly; a block "
                    + "must arrive within kvstore.limits.frame-timeout of its first bytes and the whole body within "
                    + "kvstore.limits.upload-deadline; its slot was released");
        }

        private RuntimeException readFailed(IOException e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof java.net.SocketTimeoutException) {
                    return new RequestTimeoutException("frame " + Math.max(frame, 0)
                            + ": the body stalled (no bytes within the connection timeout); nothing more was stored");
                }
            }
            return new ClientGoneException("the client closed the upload at frame " + Math.max(frame, 0), e);
        }

        private int read() throws IOException {
            if (System.nanoTime() - deadlineNanos > 0) {
                throw late();
            }
            try {
                return in.read();
            } catch (IOException e) {
                throw readFailed(e);
            }
        }

        private byte[] readBytes(int n) throws IOException {
            count(n);
            byte[] b;
            try {
                b = in.readNBytes(n);
            } catch (IOException e) {
                throw readFailed(e);
            }
            if (b.length < n) {
                throw invalid("the body ends inside the frame header");
            }
            return b;
        }

        private int readByte() throws IOException {
            count(1);
            int b = read();
            if (b < 0) {
                throw invalid("the body ends inside the frame header");
            }
            return b;
        }

        private void count(long n) {
            consumed += n;
            if (consumed > limit) {
                throw new PayloadTooLargeException(
                        "the body is larger than kvstore.max-request-size (" + limit + " bytes)");
            }
        }

        private InvalidRequestException invalid(String message) {
            return new InvalidRequestException("body", "frame " + frame + ": " + message);
        }

        private static long saturatedAdd(long a, long b) {
            long r = a + b;
            return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
        }
    }

    /** Writes frames to a response body. Not thread-safe; one per response. */
    public static final class Writer {

        private final OutputStream out;
        private final byte[] chunk = new byte[CHUNK];

        public Writer(OutputStream out) {
            this.out = out;
        }

        /** Writes a missing frame: the header with {@link #MISSING} as length and no bytes. */
        public void writeMissing(Header header) throws IOException {
            writeHeader(header, MISSING);
        }

        public void write(Header header, MemorySegment bytes) throws IOException {
            writeHeader(header, header.length());
            if (out instanceof ServletOutputStream servlet) {
                // off-heap block straight into the connector's buffer (Servlet 6.1), no heap chunk between
                servlet.write(bytes.asByteBuffer());
                return;
            }
            long size = bytes.byteSize();
            for (long done = 0; done < size; ) {
                int n = (int) Math.min(chunk.length, size - done);
                MemorySegment.copy(bytes, ValueLayout.JAVA_BYTE, done, chunk, 0, n);
                out.write(chunk, 0, n);
                done += n;
            }
        }

        private void writeHeader(Header header, int length) throws IOException {
            out.write(header.hash().length());
            out.write(header.hash().toBytes());
            if (header.parent() == null) {
                out.write(0);
            } else {
                out.write(header.parent().length());
                out.write(header.parent().toBytes());
            }
            out.write(length >>> 24);
            out.write(length >>> 16);
            out.write(length >>> 8);
            out.write(length);
        }
    }
}
