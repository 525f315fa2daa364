package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.service.local.ControlFrames;
import io.kvstore.service.local.ControlFrames.Reader;
import io.kvstore.service.local.ControlFrames.Writer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The local control socket when protected mode ends at run time: a connection that said HELLO without a
 * token while no token was configured (the {@code local} caller) is refused at its next frame once a token
 * is issued, as a loopback HTTP client without a token is.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.local.enabled=true",
            "kvstore.tiers.dram.capacity=8MB",
            "kvstore.tiers.dram.slab-size=1MB",
            "kvstore.tiers.nvme.enabled=false",
            "kvstore.admin-token=admin-secret-0123456789"
        })
class ControlSocketProtectedModeTest {

    static final String[] ADMIN = {"Authorization", "Bearer admin-secret-0123456789"};

    @LocalServerPort
    int port;

    private static Writer reserve(String ns, BlockHash hash) {
        return new Writer(ControlFrames.RESERVE)
                .str(ns)
                .i64(-1)
                .u32(1)
                .hash(hash.hex())
                .hash(null);
    }

    @Test
    void aTokenlessConnectionOfProtectedModeIsRefusedOnceATokenIsIssued() throws Exception {
        var http = new Http(port);
        // protected mode: loopback clients need no token
        var declared = http.json("PUT", "/v1/namespaces/p-1", TestLayout.declaration("m"));
        assertThat(declared.statusCode()).as(declared.body()).isEqualTo(201);
        var view = http.get("/v1/local");
        assertThat(view.statusCode()).as(view.body()).isEqualTo(200);
        Path socket = Path.of(TenantApiTest.field(view.body(), "controlSocket"));
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(2, 41));
        try (var c = new ControlSocketTest.Connection(socket)) {
            Reader hello = c.call(new Writer(ControlFrames.HELLO).str(""));
            assertThat(hello.kind()).isEqualTo(ControlFrames.OK);
            assertThat(c.call(reserve("p-1", hashes.get(0))).kind()).isEqualTo(ControlFrames.OK);

            // the operator issues the first token: protected mode ends
            var issued = http.json(
                    "POST", "/admin/tokens", "{\"tenant\":\"local\",\"write\":[\"p-*\"],\"oneSided\":true}", ADMIN);
            assertThat(issued.statusCode()).as(issued.body()).isEqualTo(201);
            assertThat(http.get("/v1/namespaces/p-1").statusCode()).isEqualTo(401);

            // the connection that never showed a token is refused as HTTP is, and closed
            Reader after = c.call(reserve("p-1", hashes.get(1)));
            assertThat(after.kind()).as("an error frame").isEqualTo(ControlFrames.ERROR);
            assertThat(after.u16()).isEqualTo(401);
            assertThat(c.closedByService()).isTrue();
        }
    }
}
