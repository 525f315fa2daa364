package io.kvstore.ffm.libc;

import java.io.IOException;

/** A libc call failed: names the call, what it acted on, its arguments, errno and strerror. */
public class PosixException extends IOException {

    private final String call;
    private final int errno;

    public PosixException(String call, String target, String arguments, int errno) {
        super(call + "(" + target + (arguments.isEmpty() ? "" : ", " + arguments) + ") failed"
                + (errno == 0 ? "" : ": " + LibC.strerror(errno) + " (errno " + errno + ")"));
        this.call = call;
        this.errno = errno;
    }

    public String call() {
        return call;
    }

    /** The errno value, or 0 when the failure was not a libc error (e.g. a short file). */
    public int errno() {
        return errno;
    }
}
