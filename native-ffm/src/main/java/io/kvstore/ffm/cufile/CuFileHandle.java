package io.kvstore.ffm.cufile;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A file descriptor registered with cuFile. Closing deregisters it; the descriptor itself stays
 * open and owned by whoever opened it.
 */
public final class CuFileHandle implements AutoCloseable {

    private final CuFile cufile;
    private final MemorySegment handle;
    private final int fd;
    private final String path;
    private final AtomicBoolean closed = new AtomicBoolean();

    CuFileHandle(CuFile cufile, MemorySegment handle, int fd, String path) {
        this.cufile = cufile;
        this.handle = handle;
        this.fd = fd;
        this.path = path;
    }

    MemorySegment handle() {
        if (closed.get()) {
            throw new IllegalStateException("cuFile handle for " + path + " is closed");
        }
        return handle;
    }

    public int fd() {
        return fd;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            cufile.deregister(handle);
        }
    }

    @Override
    public String toString() {
        return "fd " + fd + " (" + path + ")";
    }
}
