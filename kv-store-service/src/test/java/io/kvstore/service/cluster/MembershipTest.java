package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.json.JsonMapper;

/** Membership against a real etcd: join, watch, a node that stops renewing leaves, etcd restarted. */
class MembershipTest {

    @RegisterExtension
    static final EtcdExtension etcd = new EtcdExtension();

    static ClusterProperties properties(String prefix, String name) {
        return properties(etcd.endpoint(), prefix, name);
    }

    static ClusterProperties properties(String endpoint, String prefix, String name) {
        return new ClusterProperties(
                true,
                List.of(endpoint),
                name,
                "http://127.0.0.1:1/" + name,
                prefix,
                Duration.ofSeconds(3),
                1,
                Map.of(),
                16,
                Duration.ofSeconds(30),
                Duration.ofSeconds(2),
                null,
                null);
    }

    static Membership join(Client client, String prefix, String name) throws Exception {
        return join(client, prefix, name, System.currentTimeMillis());
    }

    static Membership join(Client client, String prefix, String name, long joinedAt) throws Exception {
        return join(client, properties(prefix, name), joinedAt);
    }

    static Membership join(Client client, ClusterProperties p, long joinedAt) throws Exception {
        String name = p.nodeName();
        var m = new Membership(
                client,
                p,
                new Member(name, p.advertisedAddress(), joinedAt),
                JsonMapper.builder().build(),
                Clock.systemUTC());
        m.start();
        return m;
    }

    static List<String> names(Membership m) {
        return m.current().members().stream().map(Member::name).toList();
    }

    @Test
    void nodesSeeEachOtherAndALeavingNodeLeavesAtOnce() throws Exception {
        try (Client ca = EtcdClients.connect(List.of(etcd.endpoint()));
                Client cb = EtcdClients.connect(List.of(etcd.endpoint()))) {
            Membership a = join(ca, "/t1/", "a");
            Membership b = join(cb, "/t1/", "b");
            await().atMost(Duration.ofSeconds(20)).until(() -> names(a).equals(List.of("a", "b")));
            assertThat(names(b)).containsExactly("a", "b");
            // within the hand-off grace period both know the set as it was before b joined, b included
            assertThat(b.recent())
                    .extracting(s -> s.members().stream().map(Member::name).toList())
                    .containsExactly(List.of("a", "b"), List.of("a"));
            assertThat(a.recent()).hasSize(2);
            long epoch = a.current().epoch();
            b.close();
            await().atMost(Duration.ofSeconds(20)).until(() -> names(a).equals(List.of("a")));
            assertThat(a.current().epoch()).isGreaterThan(epoch);
            // a member that left is asked about nothing: what it held left with it
            assertThat(a.recent()).hasSize(1);
            a.close();
        }
    }

    @Test
    void aNodeThatStopsRenewingLeavesWithinTheTtl() throws Exception {
        try (Client ca = EtcdClients.connect(List.of(etcd.endpoint()))) {
            Membership a = join(ca, "/t2/", "a");
            Client cb = EtcdClients.connect(List.of(etcd.endpoint()));
            join(cb, "/t2/", "b");
            await().atMost(Duration.ofSeconds(20)).until(() -> names(a).equals(List.of("a", "b")));
            cb.close(); // b's renewals now fail: like a crashed process, it never revokes its lease
            long stopped = System.nanoTime();
            await().atMost(Duration.ofSeconds(30)).until(() -> names(a).equals(List.of("a")));
            // TTL 3 s; etcd expires leases within about a second of their TTL (margin for a loaded machine)
            assertThat(Duration.ofNanos(System.nanoTime() - stopped)).isLessThan(Duration.ofSeconds(15));
            a.close();
        }
    }

    @Test
    void nodesRejoinAfterEtcdRestartsAndKeepTheirSetWhileItIsDown() throws Exception {
        try (Client ca = EtcdClients.connect(List.of(etcd.endpoint()));
                Client cb = EtcdClients.connect(List.of(etcd.endpoint()))) {
            Membership a = join(ca, "/t3/", "a");
            Membership b = join(cb, "/t3/", "b");
            await().atMost(Duration.ofSeconds(20)).until(() -> names(a).equals(List.of("a", "b")));
            etcd.stop();
            await().atMost(Duration.ofSeconds(20)).until(() -> !a.etcdReachable());
            assertThat(names(a)).containsExactly("a", "b"); // the last known set stays in force
            Thread.sleep(4000); // longer than the TTL: etcd may have to forget the leases
            etcd.start();
            await().atMost(Duration.ofSeconds(60)).until(() -> a.etcdReachable() && b.etcdReachable());
            await().atMost(Duration.ofSeconds(30)).until(() -> names(a).equals(List.of("a", "b")));
            // a third node joining after the restart is seen through the watch restarted by the resync
            try (Client cc = EtcdClients.connect(List.of(etcd.endpoint()))) {
                Membership c = join(cc, "/t3/", "c");
                await().atMost(Duration.ofSeconds(20)).until(() -> names(a).equals(List.of("a", "b", "c")));
                c.close();
            }
            a.close();
            b.close();
        }
    }

    /**
     * A node whose lease expired while it lived (a pause or a partition longer than the TTL) left the set, and
     * its runs were stored on other nodes meanwhile. When it registers again, that is a join: for the hand-off
     * grace lookups also ask the set without it, where those blocks are, so its return turns no hit into a miss.
     */
    @Test
    void aNodeRegisteringAgainAfterItsLeaseExpiredIsAJoinForTheHandOffGrace() throws Exception {
        long longAgo = System.currentTimeMillis() - 120_000; // both joined before the 30 s grace
        try (Client ca = EtcdClients.connect(List.of(etcd.endpoint()));
                Client cb = EtcdClients.connect(List.of(etcd.endpoint()))) {
            Membership a = join(ca, "/t4/", "a", longAgo);
            Membership b = join(cb, "/t4/", "b", longAgo + 1);
            try {
                await().atMost(Duration.ofSeconds(20)).until(() -> names(a).equals(List.of("a", "b")));
                assertThat(a.recent()).hasSize(1);
                // etcd forgets b's lease, as when b did not renew within the TTL
                long lease = ca.getKVClient()
                        .get(PrefixMirror.bytes("/t4/members/b"))
                        .get(30, TimeUnit.SECONDS)
                        .getKvs()
                        .getFirst()
                        .getLease();
                ca.getLeaseClient().revoke(lease).get(30, TimeUnit.SECONDS);
                await().atMost(Duration.ofSeconds(20)).until(() -> names(a).equals(List.of("a")));
                await().atMost(Duration.ofSeconds(20)).until(() -> names(a).equals(List.of("a", "b")));
                assertThat(a.recent())
                        .extracting(
                                set -> set.members().stream().map(Member::name).toList())
                        .containsExactly(List.of("a", "b"), List.of("a"));
            } finally {
                a.close();
                b.close();
            }
        }
    }
}
