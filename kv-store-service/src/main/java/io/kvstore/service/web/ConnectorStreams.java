package io.kvstore.service.web;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.ServletResponseWrapper;
import java.io.IOException;

/**
 * The servlet container's own response stream, beneath any wrappers. Spring MVC hands handlers a response
 * wrapped for async-request bookkeeping whose stream does not pass Servlet 6.1's {@code write(ByteBuffer)}
 * through: the API's default then copies every off-heap block into a fresh heap array first (2 MiB of
 * allocation, zeroing and copying per block, measured with perf). Synchronous block sends write to the
 * container's stream directly; Tomcat then moves the block from its off-heap memory through its socket
 * buffer with no heap array between.
 */
public final class ConnectorStreams {

    /**
     * The response buffer for answers that carry blocks. Tomcat writes a large buffer in pieces of the response
     * buffer's size, each its own chunk of a chunked answer: with the default 8 KiB a 2 MiB block went out as
     * 256 chunks, and the Python client spent its time on chunk headers (0.67 GB/s per fetch; 1.5 GB/s with
     * 128 KiB, docs/benchmarks.md). 128 KiB is the most Tomcat keeps when it recycles a response for the next
     * request (it drops a buffer over 16 times its default), so the buffer is allocated once per recycled
     * response object, not per request.
     */
    static final int BLOCK_BUFFER = 128 * 1024;

    private ConnectorStreams() {}

    /** {@link #outputStream} for an answer of blocks, with the response buffer at {@link #BLOCK_BUFFER}. */
    public static ServletOutputStream forBlocks(ServletResponse response) throws IOException {
        response.setBufferSize(BLOCK_BUFFER);
        return outputStream(response);
    }

    public static ServletOutputStream outputStream(ServletResponse response) throws IOException {
        ServletResponse r = response;
        while (r instanceof ServletResponseWrapper wrapper) {
            r = wrapper.getResponse();
        }
        return r.getOutputStream();
    }
}
