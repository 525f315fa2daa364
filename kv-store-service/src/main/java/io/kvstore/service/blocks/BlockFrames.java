package io.kvstore.service.blocks;

import io.kvstore.block.BlockHash;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.PayloadTooLargeException;
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
 * Block bytes go between the stream and off-heap memory through one small reusable chunk, so a batch
 * is never held on the heap whatever its size.
 */
public final class BlockFrames {

    /** Bytes copied per step between a stream and off-heap memory. */
    static final int CHUNK = 64 * 1024;

    private BlockFrames() {}

    /** One frame's header. */
    public record Header(BlockHash hash, BlockHash parent, int length) {

        /** Bytes of the header on the wire. */
        public int wireBytes() {
            return 1 + hash.length() + 1 + (parent == null ? 0 : parent.length()) + 4;
        }
    }

    /** Reads frames from a request body, counting bytes against a limit. */
    public static final class Reader {

        private final InputStream in;
        private final long limit;
        private final byte[] chunk = new byte[CHUNK];
        private long consumed;
        private int frame = -1;

        public Reader(InputStream in, long limit) {
            this.in = in;
            this.limit = limit;
        }

        /** The index of the frame being read (0-based), for error messages. */
        public int frame() {
            return frame;
        }

        /** The next frame's header, or null at the end of the body. */
        public Header next(int hashBytes, int blockBytes) throws IOException {
            int first = in.read();
            if (first < 0) {
                return null;
            }
            frame++;
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
            int length = (readByte() << 24) | (readByte() << 16) | (readByte() << 8) | readByte();
            if (length != blockBytes) {
                throw invalid("length is " + Integer.toUnsignedString(length) + " but this namespace's blocks have "
                        + blockBytes + " bytes");
            }
            return new Header(hash, parent, length);
        }

        /** Reads the current frame's {@code dst.byteSize()} block bytes into {@code dst}. */
        public void readBlock(MemorySegment dst) throws IOException {
            long size = dst.byteSize();
            count(size);
            long done = 0;
            if (in instanceof ServletInputStream servlet) {
                // straight from the connector's buffer into off-heap memory (Servlet 6.1), no heap chunk between
                // (only the returned count is trusted: Tomcat leaves the buffer flipped after a read)
                while (done < size) {
                    int n = servlet.read(dst.asSlice(done).asByteBuffer());
                    if (n < 0) {
                        throw invalid("the body ends after " + done + " of the block's " + size + " bytes");
                    }
                    done += n;
                }
                return;
            }
            while (done < size) {
                int n = in.read(chunk, 0, (int) Math.min(chunk.length, size - done));
                if (n < 0) {
                    throw invalid("the body ends after " + done + " of the block's " + size + " bytes");
                }
                MemorySegment.copy(chunk, 0, dst, ValueLayout.JAVA_BYTE, done, n);
                done += n;
            }
        }

        private byte[] readBytes(int n) throws IOException {
            count(n);
            byte[] b = in.readNBytes(n);
            if (b.length < n) {
                throw invalid("the body ends inside the frame header");
            }
            return b;
        }

        private int readByte() throws IOException {
            count(1);
            int b = in.read();
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
    }

    /** Writes frames to a response body. Not thread-safe; one per response. */
    public static final class Writer {

        private final OutputStream out;
        private final byte[] chunk = new byte[CHUNK];

        public Writer(OutputStream out) {
            this.out = out;
        }

        public void write(Header header, MemorySegment bytes) throws IOException {
            out.write(header.hash().length());
            out.write(header.hash().toBytes());
            if (header.parent() == null) {
                out.write(0);
            } else {
                out.write(header.parent().length());
                out.write(header.parent().toBytes());
            }
            int length = header.length();
            out.write(length >>> 24);
            out.write(length >>> 16);
            out.write(length >>> 8);
            out.write(length);
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
    }
}
