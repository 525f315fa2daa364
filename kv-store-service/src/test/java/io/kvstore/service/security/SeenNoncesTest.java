package io.kvstore.service.security;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.service.security.SeenNonces.Nonce;
import io.kvstore.service.security.SeenNonces.Outcome;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The nonces of accepted peer calls: each taken once in its window, never more kept than the capacity. */
class SeenNoncesTest {

    private static final long WINDOW = 300;
    private static final long NOW = 1_800_000_000L;

    @Test
    void aNonceIsTakenOnceAndAnotherStillIs() {
        SeenNonces seen = new SeenNonces(WINDOW, 10);
        assertThat(seen.accept(NOW, new Nonce(1, 1), NOW)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW, new Nonce(1, 1), NOW + WINDOW)).isEqualTo(Outcome.REPLAYED);
        assertThat(seen.accept(NOW, new Nonce(1, 2), NOW)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.accept(NOW - WINDOW, new Nonce(1, 1), NOW))
                .as("signed at another second: another call")
                .isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.kept()).isEqualTo(3);
    }

    @Test
    void aFullStoreRefusesNewCallsUntilTheirSecondsLeaveTheWindowAndNeverForgetsOne() {
        SeenNonces seen = new SeenNonces(WINDOW, 3);
        for (int i = 0; i < 3; i++) {
            assertThat(seen.accept(NOW, new Nonce(7, i), NOW)).isEqualTo(Outcome.ACCEPTED);
        }
        assertThat(seen.accept(NOW + 1, new Nonce(7, 3), NOW + 1)).isEqualTo(Outcome.FULL);
        assertThat(seen.accept(NOW + WINDOW, new Nonce(7, 3), NOW + WINDOW))
                .as("the first three still in the window")
                .isEqualTo(Outcome.FULL);
        assertThat(seen.accept(NOW, new Nonce(7, 0), NOW + WINDOW))
                .as("a replay is told apart from a new call")
                .isEqualTo(Outcome.REPLAYED);

        // one second later their second has left the window: dropped whole, and the new call taken
        assertThat(seen.accept(NOW + WINDOW + 1, new Nonce(7, 3), NOW + WINDOW + 1))
                .isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.kept()).isEqualTo(1);
    }

    @Test
    void aSecondTakingTheSlotOfOneOutOfTheWindowGivesBackItsCount() {
        SeenNonces seen = new SeenNonces(WINDOW, 10);
        seen.accept(NOW, new Nonce(3, 1), NOW);
        seen.accept(NOW, new Nonce(3, 2), NOW);
        long sameSlot = NOW + 2 * WINDOW + 1;
        assertThat(seen.accept(sameSlot, new Nonce(3, 3), sameSlot)).isEqualTo(Outcome.ACCEPTED);
        assertThat(seen.kept()).isEqualTo(1);
        assertThat(seen.accept(NOW, new Nonce(3, 1), NOW))
                .as("a whole ring older than a second in use")
                .isEqualTo(Outcome.EXPIRED);
    }

    @Test
    void racingThreadsTakeEachNonceOnceAndNeverMoreThanTheCapacity() throws Exception {
        int threads = 8;
        int nonces = 2_000;
        int capacity = 1_500;
        SeenNonces seen = new SeenNonces(WINDOW, capacity);
        Map<Nonce, AtomicInteger> accepted = new ConcurrentHashMap<>();
        AtomicInteger full = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < nonces; i++) {
                        Nonce nonce = new Nonce(9, i);
                        switch (seen.accept(NOW + i % 3, nonce, NOW)) {
                            case ACCEPTED ->
                                accepted.computeIfAbsent(nonce, n -> new AtomicInteger())
                                        .incrementAndGet();
                            case FULL -> full.incrementAndGet();
                            default -> {}
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
        assertThat(accepted.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
        // a count reserved and given back (the same nonce on two threads) can turn a call away as full meanwhile
        assertThat(accepted.size()).isLessThanOrEqualTo(capacity).isGreaterThan(capacity - threads * 4);
        assertThat(seen.kept()).isEqualTo(accepted.size());
        assertThat(full.get()).isPositive();
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
