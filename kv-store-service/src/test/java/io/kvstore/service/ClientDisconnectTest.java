package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** A client that closes its connection mid-upload is counted in kvstore_client_disconnects_total. */
class ClientDisconnectTest extends ServiceTest {

    @Test
    void aClientThatClosesMidUploadIsCounted() throws Exception {
        // a namespace of its own: the context (and its catalog) is shared with the other ServiceTest classes
        http.json("PUT", "/v1/namespaces/half-upload", TestLayout.declaration("m"));
        double before = disconnects();
        var hashes = TestLayout.hashes(TestLayout.tokens(4, 11));
        byte[] body = Http.frames(hashes, TestLayout.blocks(4, 11), null);
        try (Socket socket = new Socket("127.0.0.1", port)) {
            OutputStream out = socket.getOutputStream();
            out.write(("PUT /v1/namespaces/half-upload/blocks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            + "Content-Type: application/octet-stream\r\nContent-Length: " + body.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(body, 0, body.length / 2 + 100); // into the third block, then gone
            out.flush();
        }
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (disconnects() < before + 1 && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertThat(disconnects()).isEqualTo(before + 1);
    }

    private double disconnects() throws Exception {
        Matcher m = Pattern.compile("(?m)^kvstore_client_disconnects_total (\\S+)$")
                .matcher(http.get("/actuator/prometheus").body());
        assertThat(m.find()).as("kvstore_client_disconnects_total is exported").isTrue();
        return Double.parseDouble(m.group(1));
    }
}
