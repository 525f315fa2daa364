package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockHash;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.PeerCredentials;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.json.JsonMapper;

/**
 * A signed call whose first copy the called node took (the JDK client's own retry of an idempotent call on a stale
 * pooled connection resends the same bytes; a party on the path may deliver a captured copy first) is answered 409
 * for its nonce; the calling node signs it again, with a fresh nonce, and sends it once more, so the call succeeds.
 * Between a {@link RemotePeer} and a real node sits a relay that can deliver a request twice and return the second
 * answer. Any other 409 is the node's answer and is not sent again.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.tiers.dram.capacity=8MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.enabled=false",
            "kvstore.transport.enabled=false",
            "kvstore.cluster.secret=" + ClusterNodes.SECRET,
            "kvstore.cluster.node-name=b",
            "kvstore.tokens[0].tenant=alpha",
            "kvstore.tokens[0].token=alpha-token-0123456789",
            "kvstore.tokens[0].write=a-*"
        })
class PeerNonceResendTest {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final Caller ALPHA_CALLER = new Caller("alpha", "config-0", List.of(), List.of("a-*"), false, false);
    static final Caller ADMIN_CALLER = new Caller("ops", "config-9", List.of(), List.of(), false, true);

    @LocalServerPort
    int port;

    /** Whether the relay delivers the next request it gets twice. */
    private final AtomicBoolean duplicateNext = new AtomicBoolean();

    private DuplicatingRelay relay;

    @AfterEach
    void stop() {
        if (relay != null) {
            relay.close();
        }
    }

    /** A relay to this node that delivers a request twice when {@link #duplicateNext} is set. */
    private String relay() throws IOException {
        relay = new DuplicatingRelay("http://127.0.0.1:" + port, () -> duplicateNext.getAndSet(false));
        return relay.address();
    }

    /**
     * Node "a" calling node "b" through the relay, with the cluster's secret, once it called b (and so learned b's
     * run from the refusal of its first call); the relay's record starts after that call.
     */
    private RemotePeer peerThroughRelay() throws IOException {
        RemotePeer peer = peerAt(relay());
        peer.tiers(ADMIN_CALLER);
        assertThat(relay.answers)
                .as("the first call names no run of b, refused, signed again")
                .containsExactly(409, 200);
        relay.nonces.clear();
        relay.answers.clear();
        return peer;
    }

    /** Node "a" calling node "b" at {@code address}, with the cluster's secret. */
    private static RemotePeer peerAt(String address) {
        return new RemotePeer(
                new Member("b", address, 1),
                new Member("a", "http://127.0.0.1:1", 1),
                java.net.http.HttpClient.newHttpClient(),
                JSON,
                Duration.ofSeconds(10),
                null,
                null,
                new PeerCredentials(ClusterNodes.SECRET, "a", JSON, Clock.systemUTC()));
    }

    @Test
    void anAdminCallWhoseFirstCopyTheNodeTookIsSignedAgainAndAnswered() throws Exception {
        RemotePeer peer = peerThroughRelay();
        duplicateNext.set(true);

        var tiers = peer.tiers(ADMIN_CALLER);

        assertThat(tiers).isNotNull();
        // the first copy answered, the second refused for its nonce, then the call signed again and answered
        assertThat(relay.answers).containsExactly(200, 409, 200);
        assertThat(relay.nonces).hasSize(2).doesNotContainNull().doesNotHaveDuplicates();
    }

    @Test
    void aStoreWhoseFirstCopyTheNodeTookIsSignedAgainAndStored() throws Exception {
        String base = "http://127.0.0.1:" + port;
        var declared = ClusterNodes.send(base, "PUT", "/v1/namespaces/a-stored", ClusterNodes.DECLARATION, ALPHA);
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        RemotePeer peer = peerThroughRelay();
        BlockHash hash = ClusterNodes.chain(1, 7101).getFirst();
        duplicateNext.set(true);

        peer.store(ALPHA_CALLER, "a-stored", ClusterNodes.frame(hash, ClusterNodes.content(hash)));

        assertThat(relay.answers).containsExactly(200, 409, 200);
        assertThat(relay.nonces).hasSize(2).doesNotHaveDuplicates();
        assertThat(ClusterNodes.fetch(base, "a-stored", List.of(hash), ALPHA).statusCode())
                .isEqualTo(200);
    }

    @Test
    void anotherConflictIsTheAnswerAndIsNotSentAgain() throws Exception {
        var declared = ClusterNodes.send(
                "http://127.0.0.1:" + port, "PUT", "/v1/namespaces/a-declared", ClusterNodes.DECLARATION, ALPHA);
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        NamespaceDeclaration other = JSON.readValue(
                ClusterNodes.DECLARATION.replace("\"headDim\":64", "\"headDim\":128"), NamespaceDeclaration.class);
        RemotePeer peer = peerThroughRelay();

        assertThatThrownBy(() -> peer.declare(ALPHA_CALLER, "a-declared", other))
                .isInstanceOfSatisfying(
                        PeerException.class, e -> assertThat(e.status()).isEqualTo(409));
        assertThat(relay.answers).containsExactly(409);
    }
}
