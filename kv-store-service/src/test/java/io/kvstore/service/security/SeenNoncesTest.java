package io.kvstore.service.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.service.error.NonceRefusedException;
import io.kvstore.service.security.SeenNonces.Nonce;
import io.kvstore.service.security.SeenNonces.Outcome;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/** The anti-replay windows of the senders of peer calls: each nonce taken once, memory bounded by the senders. */
class SeenNoncesTest {

    private static final long SKEW = 300;
    private static final long NOW = 1_800_000_000L;
    private static final int W = SeenNonces.WINDOW;

    @Test
    void aRepeatIsRefusedAndAnotherCountOrSenderStillTaken() {
        SeenNonces seen = new SeenNonces(SKEW, 10);
        assertThat(seen.accept(NOW, new Nonce(1, 1), NOW)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW, new Nonce(1, 1), NOW + SKEW)).isEqualTo(Outcome.REPLAYED);
        assertThat(seen.accept(NOW, new Nonce(1, 2), NOW)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW, new Nonce(2, 1), NOW)).as("another sender").isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW - SKEW, new Nonce(1, 1), NOW))
                .as("the same nonce signed at another time: still the same call of its sender")
                .isEqualTo(Outcome.REPLAYED);
        assertThat(seen.accept(NOW - SKEW - 1, new Nonce(1, 3), NOW))
                .as("a timestamp out of the window")
                .isEqualTo(Outcome.EXPIRED);
        assertThat(seen.senders()).isEqualTo(2);
    }

    @Test
    void aBusySenderIsNeverRefusedForItsRateAndKeepsOneWindow() {
        // two million calls in one second: far past the 1,000,000 nonces a node kept before, refused with 429 then
        SeenNonces seen = new SeenNonces(SKEW, 1);
        for (long count = 1; count <= 2_000_000; count++) {
            if (seen.accept(NOW, new Nonce(1, count), NOW) != Outcome.ACCEPTED) {
                throw new AssertionError("call " + count + " of one sender refused");
            }
        }
        assertThat(seen.senders()).isEqualTo(1);
        assertThat(seen.accept(NOW, new Nonce(1, 2_000_000), NOW)).isEqualTo(Outcome.REPLAYED);
    }

    @Test
    void countsArrivingOutOfOrderWithinTheWindowAreEachTakenOnce() {
        SeenNonces seen = new SeenNonces(SKEW, 10);
        assertThat(seen.accept(NOW, new Nonce(5, 100), NOW)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW, new Nonce(5, 1000 + W - 1), NOW)).isEqualTo(Outcome.ACCEPTED);
        // 1000 is the lowest count the window still holds: later calls arrived first, it is still taken once
        for (long count : new long[] {1000, 5000, 1000 + W - 2}) {
            assertThat(seen.accept(NOW, new Nonce(5, count), NOW)).isEqualTo(Outcome.ACCEPTED);
            assertThat(seen.accept(NOW, new Nonce(5, count), NOW)).isEqualTo(Outcome.REPLAYED);
        }
        assertThat(seen.accept(NOW, new Nonce(5, 1000 + W - 1), NOW)).isEqualTo(Outcome.REPLAYED);
    }

    @Test
    void aCountBelowTheWindowIsRefusedAsTooOldNeverTaken() {
        SeenNonces seen = new SeenNonces(SKEW, 10);
        assertThat(seen.accept(NOW, new Nonce(5, 10), NOW)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW, new Nonce(5, 11 + W), NOW)).isEqualTo(Outcome.ACCEPTED);

        assertThat(seen.accept(NOW, new Nonce(5, 11), NOW))
                .as("never taken, but %d later counts were: it cannot be told from a replay", W)
                .isEqualTo(Outcome.TOO_OLD);
        assertThat(seen.accept(NOW, new Nonce(5, 10), NOW)).isEqualTo(Outcome.TOO_OLD);
        assertThat(seen.accept(NOW, new Nonce(5, 12), NOW))
                .as("the lowest in the window")
                .isEqualTo(Outcome.ACCEPTED);
    }

    @Test
    void aWindowMovedUpForgetsTheCountsItPassedAndOnlyThose() {
        SeenNonces seen = new SeenNonces(SKEW, 10);
        for (long count = 1; count <= 100; count++) {
            assertThat(seen.accept(NOW, new Nonce(5, count), NOW)).isEqualTo(Outcome.ACCEPTED);
        }
        long highest = W + 51;
        assertThat(seen.accept(NOW, new Nonce(5, highest), NOW)).isEqualTo(Outcome.ACCEPTED);

        assertThat(seen.accept(NOW, new Nonce(5, 51), NOW))
                .as("left the window")
                .isEqualTo(Outcome.TOO_OLD);
        assertThat(seen.accept(NOW, new Nonce(5, 60), NOW))
                .as("still in the window")
                .isEqualTo(Outcome.REPLAYED);
        for (long count = W + 1; count < highest; count++) {
            assertThat(seen.accept(NOW, new Nonce(5, count), NOW))
                    .as("count %d, whose bit count %d had before the window passed it", count, count - W)
                    .isEqualTo(Outcome.ACCEPTED);
        }
        // a jump past the whole window forgets everything below it
        assertThat(seen.accept(NOW, new Nonce(5, highest + 3L * W), NOW)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW, new Nonce(5, highest + 2L * W + 1), NOW)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW, new Nonce(5, highest), NOW)).isEqualTo(Outcome.TOO_OLD);
    }

    @Test
    void theNodeRefusesAReplayAndACallBelowItsSendersWindowWith409TellingThemApart() {
        PeerCredentials node = new PeerCredentials(
                "a-cluster-secret-of-some-length",
                "b",
                JsonMapper.builder().build(),
                Clock.fixed(Instant.ofEpochSecond(NOW), ZoneOffset.UTC));
        node.take(new PeerCredentials.Signed(Caller.LOCAL, NOW, new Nonce(7, 2)));
        node.take(new PeerCredentials.Signed(Caller.LOCAL, NOW, new Nonce(7, 1 + W)));

        assertThatThrownBy(() -> node.take(new PeerCredentials.Signed(Caller.LOCAL, NOW, new Nonce(7, 2))))
                .as("the lowest count the window holds, taken before")
                .isInstanceOfSatisfying(
                        NonceRefusedException.class, e -> assertThat(e.boot()).isEqualTo(node.boot()))
                .hasMessageContaining("already accepted")
                .hasMessageContaining("replayed");
        assertThatThrownBy(() -> node.take(new PeerCredentials.Signed(Caller.LOCAL, NOW, new Nonce(7, 1))))
                .as("never taken, but below the window")
                .isInstanceOf(NonceRefusedException.class)
                .hasMessageContaining("older than the replay window")
                .hasMessageContaining("sign it again");
    }

    @Test
    void aSenderIdleForTwiceTheSkewIsForgottenAndItsOldCallsAreRefusedByTheirTimestampAnyway() {
        SeenNonces seen = new SeenNonces(SKEW, 10);
        long idle = seen.idleSeconds();
        assertThat(idle).isGreaterThan(2 * SKEW);
        // signed as far ahead of this node's clock as a signature may be: presentable longest
        assertThat(seen.accept(NOW + SKEW, new Nonce(1, 7), NOW)).isEqualTo(Outcome.ACCEPTED);

        // at the idle bound the sender is still kept
        assertThat(seen.accept(NOW + idle, new Nonce(2, 1), NOW + idle)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.senders()).isEqualTo(2);

        // past it, forgotten: only the sender that called since is kept
        assertThat(seen.accept(NOW + idle + 1, new Nonce(2, 2), NOW + idle + 1)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.senders()).isEqualTo(1);
        // and the call it took, replayed now, is refused by its timestamp, not let through
        assertThat(seen.accept(NOW + SKEW, new Nonce(1, 7), NOW + idle + 1)).isEqualTo(Outcome.EXPIRED);
        // the same sender signing anew starts a fresh window
        assertThat(seen.accept(NOW + idle + 1, new Nonce(1, 8), NOW + idle + 1)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.senders()).isEqualTo(2);
    }

    @Test
    void pastTheSenderCapANewSenderIsRefusedAndNoLiveOneForgotten() {
        SeenNonces seen = new SeenNonces(SKEW, 2);
        long idle = seen.idleSeconds();
        assertThat(seen.accept(NOW, new Nonce(1, 1), NOW)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW, new Nonce(2, 1), NOW)).isEqualTo(Outcome.ACCEPTED);

        assertThat(seen.accept(NOW + 10, new Nonce(3, 1), NOW + 10)).isEqualTo(Outcome.FULL);
        // sender 1 stays live by calling: a known sender is taken however full
        assertThat(seen.accept(NOW + 400, new Nonce(1, 2), NOW + 400)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW + idle, new Nonce(3, 1), NOW + idle))
                .as("both still live")
                .isEqualTo(Outcome.FULL);

        // sender 2 idle past the bound makes room; sender 1 keeps its window
        assertThat(seen.accept(NOW + idle + 1, new Nonce(3, 1), NOW + idle + 1)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW + 400, new Nonce(1, 2), NOW + idle + 1)).isEqualTo(Outcome.REPLAYED);
        assertThat(seen.senders()).isEqualTo(2);
        assertThat(seen.accept(NOW + idle + 1, new Nonce(4, 1), NOW + idle + 1)).isEqualTo(Outcome.FULL);
    }

    @Test
    void racingThreadsOfOneSenderTakeEachCountOnce() throws Exception {
        int counts = 20_000;
        Map<Nonce, AtomicInteger> accepted = race(new SeenNonces(SKEW, 1), 1, counts, 8);
        assertThat(accepted).hasSize(counts);
        assertThat(accepted.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
    }

    @Test
    void racingThreadsOfManySendersTakeEachNonceOnceAndKeepOneWindowPerSender() throws Exception {
        int senders = 64;
        int counts = 1_000;
        SeenNonces seen = new SeenNonces(SKEW, senders);
        Map<Nonce, AtomicInteger> accepted = race(seen, senders, counts, 8);
        assertThat(accepted).hasSize(senders * counts);
        assertThat(accepted.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
        assertThat(seen.senders()).isEqualTo(senders);
    }

    /** Every thread offers every nonce of {@code senders} x {@code counts}, each in its own order; what was taken. */
    private static Map<Nonce, AtomicInteger> race(SeenNonces seen, int senders, int counts, int threads)
            throws Exception {
        long seed = new Random().nextLong();
        System.out.println("SeenNoncesTest seed " + seed);
        List<Nonce> all = new ArrayList<>();
        for (int s = 0; s < senders; s++) {
            for (int c = 1; c <= counts; c++) {
                all.add(new Nonce(0x5eed0000L + s, c));
            }
        }
        Map<Nonce, AtomicInteger> accepted = new ConcurrentHashMap<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            for (int t = 0; t < threads; t++) {
                List<Nonce> mine = new ArrayList<>(all);
                Collections.shuffle(mine, new Random(seed + t));
                done.add(pool.submit(() -> {
                    start.await();
                    for (Nonce nonce : mine) {
                        Outcome outcome = seen.accept(NOW, nonce, NOW);
                        if (outcome == Outcome.ACCEPTED) {
                            accepted.computeIfAbsent(nonce, n -> new AtomicInteger())
                                    .incrementAndGet();
                        } else {
                            assertThat(outcome).as("seed %d, %s", seed, nonce).isEqualTo(Outcome.REPLAYED);
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : done) {
                f.get();
            }
        }
        return accepted;
    }

    @Test
    void aNonceIsThirtyTwoHexDigits() {
        Nonce nonce = new Nonce(0x0123456789abcdefL, -1);
        assertThat(nonce.toString()).isEqualTo("0123456789abcdefffffffffffffffff");
        assertThat(Nonce.parse(nonce.toString())).isEqualTo(nonce);
        assertThat(Nonce.parse("0123456789abcdef")).isNull();
        assertThat(Nonce.parse("0123456789abcdefffffffffffffffzz")).isNull();
        assertThat(Nonce.parse(null)).isNull();
    }
}
