package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.kvstore.block.BlockHash;
import io.kvstore.service.KvStoreApplication;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.PeerCredentials;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import tools.jackson.databind.json.JsonMapper;

/**
 * Each node publishes its run in etcd beside its member record, so a peer signs even its first call to that run for
 * it: the call goes through in one round trip, where before the peer learned the run from a refusal (409, then the
 * call again). A peer whose copy is stale (the node restarted) still learns the new run from the refusal; a node of
 * an older release, which publishes no run, is a member whose run is learned so, and reads this release's member
 * records as its own. Node "b" is a real cluster node registered in a real etcd; node "a" sees it through its own
 * {@link Membership} and calls it as a {@link RemotePeer}; the calls are counted where b answers them ({@code
 * http.server.requests}, by status).
 */
class PeerBootPublishedTest {

    @RegisterExtension
    static final EtcdExtension etcd = new EtcdExtension();

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String PREFIX = "/boot-published/";
    static final String NS = "a-published";
    static final String[] ALPHA = {"Authorization", "Bearer alpha-token-0123456789"};
    static final Caller ALPHA_CALLER = new Caller("alpha", "config-0", List.of(), List.of("a-*"), false, false);
    static final Caller ADMIN_CALLER = new Caller("ops", "config-9", List.of(), List.of(), false, true);
    static final List<BlockHash> BLOCKS = ClusterNodes.chain(4, 9901);

    /** A member record as an older release reads it: no run, and strictly (Spring's mapper, as configured). */
    record OlderMember(String name, String address, long joinedAt) {}

    private static ClusterNodes.Node startB(int port) throws Exception {
        List<String> args = new ArrayList<>(
                ClusterNodes.args(etcd.endpoint(), "b", port, etcd.dir().resolve("b"), PREFIX));
        args.addAll(List.of(
                "--kvstore.tokens[0].tenant=alpha",
                "--kvstore.tokens[0].token=alpha-token-0123456789",
                "--kvstore.tokens[0].write=a-*"));
        var context = new SpringApplicationBuilder(KvStoreApplication.class).run(args.toArray(String[]::new));
        return new ClusterNodes.Node("b", port, context);
    }

    /** Node "a": a member of b's cluster, seeing b through its own copy of the member set. */
    private static Membership joinAsA(Client client) throws Exception {
        return MembershipTest.join(
                client, MembershipTest.properties(etcd.endpoint(), PREFIX, "a"), System.currentTimeMillis());
    }

    /** b as {@code a} sees it, once a's copy names {@code run} for it. */
    private static Member seen(Membership a, String run) {
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            Member b = a.current().named("b");
            return b != null && run.equals(b.boot());
        });
        return a.current().named("b");
    }

    /** Node "a" calling {@code b} as its member set shows it. */
    private static RemotePeer peerOf(Member b) {
        return new RemotePeer(
                b,
                new Member("a", "http://127.0.0.1:1", 1),
                HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(),
                JSON,
                Duration.ofSeconds(10),
                null,
                null,
                new PeerCredentials(ClusterNodes.SECRET, "a", JSON, Clock.systemUTC()));
    }

    /** The requests {@code node} answered since {@code before}, by status. */
    private static Map<String, Long> answeredSince(ClusterNodes.Node node, Map<String, Long> before) {
        Map<String, Long> since = new TreeMap<>();
        for (Timer t : node.context()
                .getBean(MeterRegistry.class)
                .find("http.server.requests")
                .timers()) {
            since.merge(t.getId().getTag("status"), t.count(), Long::sum);
        }
        before.forEach((status, n) -> since.computeIfPresent(status, (s, now) -> now - n == 0 ? null : now - n));
        return since;
    }

    /**
     * The statuses {@code node} answered while {@code call} ran: counted once {@code atLeast} were recorded (a
     * request is recorded just after its answer is sent) and a moment more, so a late one is counted too.
     */
    private static Map<String, Long> answersTo(ClusterNodes.Node node, int atLeast, Call call) throws Exception {
        Map<String, Long> before = answeredSince(node, Map.of());
        call.run();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> answeredSince(node, before).values().stream()
                                .mapToLong(Long::longValue)
                                .sum()
                        >= atLeast);
        Thread.sleep(300);
        return answeredSince(node, before);
    }

    /** A call to a peer. */
    interface Call {
        void run() throws Exception;
    }

    private static void probe(RemotePeer a) throws Exception {
        assertThat(a.probe(ALPHA_CALLER, NS, BLOCKS, false).tiers()).hasSize(BLOCKS.size());
    }

    @Test
    void aPeerCallsTheRunBPublishesInOneRoundTripAndLearnsARestartedRunFromTheRefusal() throws Exception {
        int port = io.kvstore.service.ServiceProcesses.freePort();
        try (Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            Member firstRun;
            try (ClusterNodes.Node b = startB(port)) {
                var declared =
                        ClusterNodes.send(b.base(), "PUT", "/v1/namespaces/" + NS, ClusterNodes.DECLARATION, ALPHA);
                assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
                var stored = ClusterNodes.store(b.base(), NS, ClusterNodes.frames(BLOCKS, 0, BLOCKS.size()), ALPHA);
                assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);
                try (Membership a = joinAsA(client)) {
                    firstRun = seen(a, b.boot());
                }
                RemotePeer a = peerOf(firstRun);

                // the lean probe client and the JDK client alike: each first call taken as it was sent
                assertThat(answersTo(b, 1, () -> probe(a)))
                        .as("b's answers to a's first probe")
                        .isEqualTo(Map.of("200", 1L));
                assertThat(answersTo(
                                b, 1, () -> assertThat(a.tiers(ADMIN_CALLER)).isNotNull()))
                        .as("b's answers to a's first admin call")
                        .isEqualTo(Map.of("200", 1L));
            }

            try (ClusterNodes.Node restarted = startB(port);
                    Membership a = joinAsA(client)) {
                // a copy of the member set from before b restarted: the new run refuses the call, naming itself
                RemotePeer stale = peerOf(firstRun);
                assertThat(answersTo(restarted, 2, () -> probe(stale)))
                        .as("b's answers to a peer that knew its first run")
                        .isEqualTo(Map.of("409", 1L, "200", 1L));
                assertThat(answersTo(restarted, 1, () -> probe(stale))).isEqualTo(Map.of("200", 1L));

                // a peer that sees b's new run in the member set (Peers.of) signs for it at once
                Member secondRun = seen(a, restarted.boot());
                RemotePeer updated = peerOf(firstRun);
                updated.published(secondRun.boot());
                assertThat(answersTo(restarted, 1, () -> probe(updated)))
                        .as("b's answers to a peer that saw its new run")
                        .isEqualTo(Map.of("200", 1L));
                // a stale copy seen again after a refusal taught the new run does not undo it
                stale.published(firstRun.boot());
                assertThat(answersTo(restarted, 1, () -> probe(stale))).isEqualTo(Map.of("200", 1L));
            }
        }
    }

    @Test
    void nodesOfAnOlderReleaseAndThisOneReadEachOthersMemberRecords() throws Exception {
        int port = io.kvstore.service.ServiceProcesses.freePort();
        try (Client client = EtcdClients.connect(List.of(etcd.endpoint()));
                ClusterNodes.Node b = startB(port)) {
            // an older release reads b's member record with Spring's strict JSON mapper: it is the record it knows
            JsonMapper spring = b.context().getBean(JsonMapper.class);
            var kvs = client.getKVClient()
                    .get(PrefixMirror.bytes(PREFIX + "members/b"))
                    .get()
                    .getKvs();
            assertThat(kvs).hasSize(1);
            OlderMember asOlder = spring.readValue(kvs.getFirst().getValue().getBytes(), OlderMember.class);
            assertThat(asOlder).isEqualTo(new OlderMember("b", b.base(), asOlder.joinedAt()));

            // a node of an older release announces itself without a run; this release reads it, its run unknown
            client.getKVClient()
                    .put(
                            PrefixMirror.bytes(PREFIX + "members/older"),
                            PrefixMirror.bytes(
                                    JSON.writeValueAsString(new OlderMember("older", "http://127.0.0.1:1", 5))))
                    .get();
            try (Membership a = joinAsA(client)) {
                Member seenB = seen(a, b.boot());
                await().atMost(Duration.ofSeconds(20)).until(() -> a.current().named("older") != null);
                assertThat(a.current().named("older")).isEqualTo(new Member("older", "http://127.0.0.1:1", 5));
                assertThat(seenB.boot()).isEqualTo(b.boot());

                // a member whose run is unknown is called as before: refused, learned, signed again
                RemotePeer unknownRun = peerOf(seenB.withBoot(null));
                assertThat(answersTo(
                                b,
                                2,
                                () -> assertThat(unknownRun.tiers(ADMIN_CALLER)).isNotNull()))
                        .isEqualTo(Map.of("409", 1L, "200", 1L));
            } finally {
                client.getKVClient()
                        .delete(PrefixMirror.bytes(PREFIX + "members/older"))
                        .get();
            }
        }
    }
}
