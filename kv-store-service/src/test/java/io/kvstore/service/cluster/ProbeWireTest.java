package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/** How a node reads a peer's answer to a probe. */
class ProbeWireTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Test
    void anAnswerWithATierPerBlockAndNoLeaseIsRead() throws Exception {
        Peer.Probe probe = ProbeWire.parseAnswer(new byte[] {0, (byte) ProbeWire.NOT_HELD}, 2, JSON);
        assertThat(probe.tiers()).hasSize(2);
        assertThat(probe.tiers().get(1)).isNull();
    }

    /**
     * Something other than a kvstore node answering 200 (a proxy's page after the tier bytes) is the peer's
     * fault, a 502 the lookup counts as that node holding nothing, not a Jackson error answered 500.
     */
    @Test
    void anAnswerWhoseLeaseIsNotJsonIsAPeerFailure() {
        byte[] body = "\0\0<html>bad gateway</html>".getBytes(StandardCharsets.US_ASCII);
        assertThatThrownBy(() -> ProbeWire.parseAnswer(body, 2, JSON))
                .isInstanceOf(PeerException.class)
                .hasMessageContaining("lease");
    }
}
