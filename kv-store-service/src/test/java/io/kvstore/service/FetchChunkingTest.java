package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A fetch answer is chunked (its blocks are verified as they go out), and a client pays per chunk: the
 * Python client's HTTP reader spent most of a fetch on chunk headers when a block went out in 8 KiB chunks.
 * Read here off a raw socket, as the client reads it: blocks go out in chunks of 128 KiB, and the chunks
 * put together are the frames, byte-exact.
 */
class FetchChunkingTest extends ServiceTest {

    private static final int BLOCK = 2 * 4 * 8 * 128 * 2 * 16; // 256 KiB: the layout declared below

    @Test
    void blocksGoOutInLargeChunksThatTogetherAreTheFrames() throws Exception {
        assertThat(http.json("PUT", "/v1/namespaces/chunks", """
                {"model":"m","layout":{"layers":4,"kvHeads":8,"headDim":128,"dtype":"float16","blockSize":16},
                 "hashScheme":"sha256_cbor","hashSeed":"0"}""").statusCode()).isIn(200, 201);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(2, 77));
        List<byte[]> blocks = new ArrayList<>();
        Random random = new Random(77);
        for (int i = 0; i < 2; i++) {
            byte[] b = new byte[BLOCK];
            random.nextBytes(b);
            blocks.add(b);
        }
        byte[] frames = Http.frames(hashes, blocks, null);
        assertThat(http.putBytes("/v1/namespaces/chunks/blocks", "application/octet-stream", frames)
                        .statusCode())
                .isEqualTo(200);

        String body = "{\"blockHashes\":" + Http.hexList(hashes) + "}";
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.getOutputStream()
                    .write(("POST /v1/namespaces/chunks/blocks:fetch HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    + "Content-Type: application/json\r\nContent-Length: " + body.length()
                                    + "\r\nConnection: close\r\n\r\n" + body)
                            .getBytes(StandardCharsets.US_ASCII));
            DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            assertThat(line(in)).startsWith("HTTP/1.1 200");
            List<String> headers = new ArrayList<>();
            for (String h = line(in); !h.isEmpty(); h = line(in)) {
                headers.add(h.toLowerCase(java.util.Locale.ROOT));
            }
            assertThat(headers).contains("transfer-encoding: chunked");
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            List<Integer> chunks = new ArrayList<>();
            for (int size = chunkSize(in); size > 0; size = chunkSize(in)) {
                chunks.add(size);
                answer.write(in.readNBytes(size));
                assertThat(line(in)).isEmpty();
            }
            // 2 x 256 KiB of blocks and their frame headers: 4 chunks of 128 KiB and a few small ones
            assertThat(chunks).as("chunk sizes").hasSizeLessThanOrEqualTo(8);
            assertThat(chunks.stream().filter(c -> c == 128 * 1024)).hasSize(4);
            // the fetch answer's frames are the store's, parents as stored
            assertThat(answer.toByteArray()).isEqualTo(frames);
        }
    }

    private static int chunkSize(DataInputStream in) throws IOException {
        String size = line(in);
        int semicolon = size.indexOf(';');
        return Integer.parseInt((semicolon < 0 ? size : size.substring(0, semicolon)).strip(), 16);
    }

    /** One CRLF-terminated line, without the CRLF. */
    private static String line(InputStream in) throws IOException {
        StringBuilder out = new StringBuilder();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new IOException("the answer ended inside a line");
            }
            if (c != '\r') {
                out.append((char) c);
            }
        }
        return out.toString();
    }
}
