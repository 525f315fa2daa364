package io.kvstore.ffm.cufile;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;

/**
 * A cuFile batch context: several reads and writes between files and GPU buffers submitted in one
 * call and completed together, which is how a tier moves many blocks to or from NVMe without one
 * system call each. Closing destroys it. Not thread-safe: one batch at a time per context.
 */
public final class CuFileBatch implements AutoCloseable {

    /** CUfileStatus_t values (cufile.h). */
    static final int STATUS_COMPLETE = 0x10;

    static final int STATUS_FAILED_MASK = 0x04 | 0x08 | 0x20 | 0x40; // INVALID, CANCELED, TIMEOUT, FAILED

    private static final long MODE = CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("mode"));
    private static final long BASE =
            CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("batch"), PathElement.groupElement("devPtr_base"));
    private static final long FILE_OFFSET =
            CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("batch"), PathElement.groupElement("file_offset"));
    private static final long BUFFER_OFFSET =
            CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("batch"), PathElement.groupElement("devPtr_offset"));
    private static final long SIZE =
            CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("batch"), PathElement.groupElement("size"));
    private static final long FH = CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("fh"));
    private static final long OPCODE = CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("opcode"));
    private static final long COOKIE = CuFile.IO_PARAMS.byteOffset(PathElement.groupElement("cookie"));
    private static final long EVENT_COOKIE = CuFile.IO_EVENTS.byteOffset(PathElement.groupElement("cookie"));
    private static final long EVENT_STATUS = CuFile.IO_EVENTS.byteOffset(PathElement.groupElement("status"));
    private static final long EVENT_RET = CuFile.IO_EVENTS.byteOffset(PathElement.groupElement("ret"));
    private static final MemoryLayout TIMESPEC = MemoryLayout.structLayout(JAVA_LONG, JAVA_LONG);

    /** One I/O of a batch: {@code size} bytes between {@code file} at {@code fileOffset} and {@code buffer + bufferOffset}. */
    public record Io(
            boolean write, CuFileHandle file, MemorySegment buffer, long bufferOffset, long fileOffset, long size) {
        public Io {
            if (size <= 0 || bufferOffset < 0 || fileOffset < 0 || bufferOffset + size > buffer.byteSize()) {
                throw new IllegalArgumentException("batch I/O of " + size + " bytes at buffer offset " + bufferOffset
                        + " does not fit the " + buffer.byteSize() + "-byte buffer (file offset " + fileOffset + ")");
            }
        }
    }

    private final CuFile cufile;
    private final MemorySegment handle;
    private final int capacity;
    private boolean closed;

    CuFileBatch(CuFile cufile, MemorySegment handle, int capacity) {
        this.cufile = cufile;
        this.handle = handle;
        this.capacity = capacity;
    }

    /**
     * Submits {@code ios} and waits until every one has completed; returns the bytes each moved, in order.
     *
     * @throws CuFileException when an I/O fails, is cancelled or the batch times out, naming which
     */
    public long[] run(List<Io> ios, Duration timeout) {
        if (closed) {
            throw new IllegalStateException("cuFile batch is closed");
        }
        if (ios.isEmpty() || ios.size() > capacity) {
            throw new IllegalArgumentException("a batch takes 1 to " + capacity + " I/Os, got " + ios.size());
        }
        int n = ios.size();
        long[] done = new long[n];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(CuFile.IO_PARAMS, n);
            for (int i = 0; i < n; i++) {
                Io io = ios.get(i);
                MemorySegment p = params.asSlice(i * CuFile.IO_PARAMS.byteSize(), CuFile.IO_PARAMS.byteSize());
                p.set(JAVA_INT, MODE, CuFile.BATCH_MODE);
                p.set(ADDRESS, BASE, io.buffer());
                p.set(JAVA_LONG, FILE_OFFSET, io.fileOffset());
                p.set(JAVA_LONG, BUFFER_OFFSET, io.bufferOffset());
                p.set(JAVA_LONG, SIZE, io.size());
                p.set(ADDRESS, FH, io.file().handle());
                p.set(JAVA_INT, OPCODE, io.write() ? CuFile.OPCODE_WRITE : CuFile.OPCODE_READ);
                // the cookie is the I/O's index, so completions can be matched whatever order they arrive in
                p.set(ADDRESS, COOKIE, MemorySegment.ofAddress(i + 1));
            }
            cufile.batchSubmit(handle, n, params);
            MemorySegment events = arena.allocate(CuFile.IO_EVENTS, n);
            MemorySegment count = arena.allocate(JAVA_INT);
            MemorySegment wait = arena.allocate(TIMESPEC);
            wait.set(JAVA_LONG, 0, 0L);
            wait.set(JAVA_LONG, 8, 1_000_000L); // poll every millisecond
            long deadline = System.nanoTime() + timeout.toNanos();
            int completed = 0;
            while (completed < n) {
                if (System.nanoTime() > deadline) {
                    cufile.batchCancel(handle);
                    throw new CuFileException(
                            "cuFile batch of " + n + " I/Os timed out after " + timeout + " with " + completed
                                    + " complete",
                            0);
                }
                count.set(JAVA_INT, 0, n - completed);
                cufile.batchGetStatus(handle, 0, count, events, wait);
                int got = count.get(JAVA_INT, 0);
                for (int e = 0; e < got; e++) {
                    MemorySegment ev = events.asSlice(e * CuFile.IO_EVENTS.byteSize(), CuFile.IO_EVENTS.byteSize());
                    int index = (int) ev.get(ADDRESS, EVENT_COOKIE).address() - 1;
                    int status = ev.get(JAVA_INT, EVENT_STATUS);
                    long ret = ev.get(JAVA_LONG, EVENT_RET);
                    if (status == STATUS_COMPLETE) {
                        done[index] = ret;
                        completed++;
                    } else if ((status & STATUS_FAILED_MASK) != 0) {
                        throw new CuFileException(
                                "cuFile batch I/O " + index + " (" + ios.get(index) + ") ended with status 0x"
                                        + Integer.toHexString(status) + ", ret " + ret,
                                (int) Math.abs(ret));
                    }
                }
            }
        }
        return done;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            cufile.batchDestroy(handle);
        }
    }
}
