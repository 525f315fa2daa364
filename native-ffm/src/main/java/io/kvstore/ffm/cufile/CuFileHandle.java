package io.kvstore.ffm.cufile;

import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.MemorySegment;

/**
 * A file descriptor registered with cuFile. Closing deregisters it; the descriptor itself stays
 * open and owned by whoever opened it.
 */
public final class CuFileHandle extends NativeHandle {

    private final CuFile cufile;
    private final int fd;
    private final String path;

    CuFileHandle(CuFile cufile, MemorySegment handle, int fd, String path) {
        super(handle);
        this.cufile = cufile;
        this.fd = fd;
        this.path = path;
    }

    MemorySegment handle() {
        return live();
    }

    public int fd() {
        return fd;
    }

    /** Deregisters the descriptor from cuFile. */
    @Override
    protected void release(MemorySegment handle) {
        cufile.deregister(handle);
    }

    @Override
    public String toString() {
        return "cuFile handle of fd " + fd + " (" + path + ")";
    }
}
