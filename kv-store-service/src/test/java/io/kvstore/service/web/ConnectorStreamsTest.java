package io.kvstore.service.web;

import static org.assertj.core.api.Assertions.assertThat;

import jakarta.servlet.http.HttpServletResponseWrapper;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletResponse;

class ConnectorStreamsTest {

    @Test
    void blockBytesGoToTheInnermostResponseStreamPastEveryWrapper() throws Exception {
        MockHttpServletResponse container = new MockHttpServletResponse();
        var wrapped = new HttpServletResponseWrapper(new HttpServletResponseWrapper(container));

        var stream = ConnectorStreams.outputStream(wrapped);
        assertThat(stream).isSameAs(container.getOutputStream());
        stream.write(ByteBuffer.wrap("block".getBytes(StandardCharsets.US_ASCII)));
        assertThat(container.getContentAsString()).isEqualTo("block");
    }

    @Test
    void anUnwrappedResponseGivesItsOwnStream() throws Exception {
        MockHttpServletResponse container = new MockHttpServletResponse();
        assertThat(ConnectorStreams.outputStream(container)).isSameAs(container.getOutputStream());
    }
}
