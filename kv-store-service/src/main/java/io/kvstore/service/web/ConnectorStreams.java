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

    private ConnectorStreams() {}

    public static ServletOutputStream outputStream(ServletResponse response) throws IOException {
        ServletResponse r = response;
        while (r instanceof ServletResponseWrapper wrapper) {
            r = wrapper.getResponse();
        }
        return r.getOutputStream();
    }
}
