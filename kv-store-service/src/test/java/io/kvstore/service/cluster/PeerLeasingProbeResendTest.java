package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvstore.block.BlockHash;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.PeerCredentials;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.json.JsonMapper;

/**
 * What a leasing probe delivered twice by a party on the path leaves behind: the node takes the first copy (a
 * lease, whose answer goes to that party), refuses the second for its nonce, and the calling node signs the probe
 * again and sends it once more (a second lease, its answer to the caller). The caller releases what it was given;
 * the first copy's lease stays held until it expires. A node's own clients never deliver one signed probe twice, so
 * only such a party causes it. Node "b" is a real cluster node (etcd, the probe servlet); between it and the calling
 * {@link RemotePeer} sits a relay that delivers the first request twice and returns the second answer.
 */
class PeerLeasingProbeResendTest {

    @RegisterExtension
    static final EtcdExtension etcd = new EtcdExtension();

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String NS = "a-leased";
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final Caller ALPHA_CALLER = new Caller("alpha", "config-0", List.of(), List.of("a-*"), false, false);

    @Test
    void aLeasingProbeDeliveredTwiceOnThePathLeavesTheFirstCopysLeaseToExpire() throws Exception {
        List<BlockHash> blocks = ClusterNodes.chain(3, 7707);
        try (ClusterNodes.Node b = ClusterNodes.start(
                etcd.endpoint(),
                "b",
                etcd.dir(),
                "/leased/",
                "--kvstore.tokens[0].tenant=alpha",
                "--kvstore.tokens[0].token=alpha-token-0123456789",
                "--kvstore.tokens[0].write=a-*")) {
            var declared = ClusterNodes.send(b.base(), "PUT", "/v1/namespaces/" + NS, ClusterNodes.DECLARATION, ALPHA);
            assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
            var stored = ClusterNodes.store(b.base(), NS, ClusterNodes.frames(blocks, 0, blocks.size()), ALPHA);
            assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
            TierEngine engine = b.context().getBean(TierEngine.class);
            int before = engine.activeLeases();

            AtomicBoolean first = new AtomicBoolean(true); // the first request it relays is delivered twice
            try (DuplicatingRelay relay = new DuplicatingRelay(b.base(), () -> first.getAndSet(false))) {
                RemotePeer a = new RemotePeer(
                        new Member("b", relay.address(), 1, b.boot()),
                        new Member("a", "http://127.0.0.1:1", 1),
                        HttpClient.newHttpClient(),
                        JSON,
                        Duration.ofSeconds(10),
                        null,
                        null,
                        new PeerCredentials(ClusterNodes.SECRET, "a", JSON, Clock.systemUTC()));

                Peer.Probe probe = a.probe(ALPHA_CALLER, NS, blocks, true);

                assertThat(relay.answers)
                        .as("the first copy answered (to the relay), the second refused, the probe sent again")
                        .containsExactly(200, 409, 200);
                assertThat(probe.lease()).isNotNull();
                assertThat(engine.activeLeases())
                        .as("the first copy's lease and the caller's")
                        .isEqualTo(before + 2);
                assertThat(a.release(ALPHA_CALLER, probe.lease().id())).isTrue();
                await().atMost(Duration.ofSeconds(10)).until(() -> engine.activeLeases() == before + 1);
                assertThat(engine.activeLeases())
                        .as("the first copy's lease, which no caller was given, held until it expires")
                        .isEqualTo(before + 1);
            }
        }
    }
}
