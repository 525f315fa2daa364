package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The mirror against a real etcd, kept by its watch alone (no resync after the first): what a listener is
 * told equals etcd at the revision it is told with.
 */
class PrefixMirrorTest {

    @RegisterExtension
    static final EtcdExtension etcd = new EtcdExtension();

    private record Seen(Set<String> keys, long revision) {}

    @Test
    void everyKeyOfOneTransactionReachesTheCopyThroughTheWatch() throws Exception {
        try (Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            AtomicReference<Seen> seen = new AtomicReference<>(new Seen(Set.of(), 0));
            try (PrefixMirror mirror = new PrefixMirror(
                    client,
                    "/m1/",
                    (Map<String, byte[]> entries, Map<String, Long> created, long revision) ->
                            seen.set(new Seen(Set.copyOf(entries.keySet()), revision)),
                    5000)) {
                mirror.resync(); // reads the empty prefix and starts the watch
                // fifty puts in one transaction share one revision, as cluster pins are written
                long written = txn(
                        client,
                        IntStream.range(0, 50)
                                .<Op>mapToObj(i -> Op.put(
                                        PrefixMirror.bytes("/m1/k" + i), PrefixMirror.bytes("1"), PutOption.DEFAULT))
                                .toList());
                await().atMost(Duration.ofSeconds(30)).until(() -> seen.get().revision() >= written);
                assertThat(seen.get().keys()).isEqualTo(keys(0, 50));
                // and thirty deletes in one, as an unpin removes them
                long deleted = txn(
                        client,
                        IntStream.range(0, 30)
                                .<Op>mapToObj(i -> Op.delete(PrefixMirror.bytes("/m1/k" + i), DeleteOption.DEFAULT))
                                .toList());
                await().atMost(Duration.ofSeconds(30)).until(() -> seen.get().revision() >= deleted);
                assertThat(seen.get().keys()).isEqualTo(keys(30, 50));
            }
        }
    }

    /**
     * A key deleted and put again with the same value (a namespace deleted and declared anew alike) is a change:
     * the listener is told its new create revision, whether the watch or a full read finds it first (a full read
     * that does skips the watch's events, which are older than it).
     */
    @Test
    void aKeyPutAgainWithTheSameValueIsToldWithItsNewCreateRevision() throws Exception {
        try (Client client = EtcdClients.connect(List.of(etcd.endpoint()))) {
            AtomicReference<Map<String, Long>> seen = new AtomicReference<>(Map.of());
            var key = PrefixMirror.bytes("/m2/k");
            long first = client.getKVClient()
                    .put(key, PrefixMirror.bytes("1"))
                    .get(30, TimeUnit.SECONDS)
                    .getHeader()
                    .getRevision();
            try (PrefixMirror mirror =
                    new PrefixMirror(client, "/m2/", (entries, created, revision) -> seen.set(created), 5000)) {
                mirror.resync();
                assertThat(seen.get()).isEqualTo(Map.of("k", first));
                client.getKVClient().delete(key).get(30, TimeUnit.SECONDS);
                long again = client.getKVClient()
                        .put(key, PrefixMirror.bytes("1"))
                        .get(30, TimeUnit.SECONDS)
                        .getHeader()
                        .getRevision();
                mirror.resync();
                await().atMost(Duration.ofSeconds(30)).until(() -> seen.get().equals(Map.of("k", again)));
            }
        }
    }

    private static Set<String> keys(int from, int to) {
        return IntStream.range(from, to).mapToObj(i -> "k" + i).collect(Collectors.toSet());
    }

    private static long txn(Client client, List<Op> ops) throws Exception {
        return client.getKVClient()
                .txn()
                .Then(ops.toArray(Op[]::new))
                .commit()
                .get(30, TimeUnit.SECONDS)
                .getHeader()
                .getRevision();
    }
}
