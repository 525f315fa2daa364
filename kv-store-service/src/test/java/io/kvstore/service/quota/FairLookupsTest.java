package io.kvstore.service.quota;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.service.error.TooManyRequestsException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The lookup gate: turns go round-robin by tenant, so a lookup of a tenant that arrives behind another tenant's
 * backlog runs next, not last; never more lookups run than there are turns, and none is left waiting; a waiter
 * interrupted before its turn leaves the line without taking a turn from anyone.
 */
class FairLookupsTest {

    /** Waits until {@code n} lookups wait for a turn (their threads parked in the gate). */
    private static void awaitWaiting(List<Thread> threads, int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (threads.stream()
                        .filter(t -> t.getState() == Thread.State.WAITING)
                        .count()
                < n) {
            assertThat(System.nanoTime()).as("lookups lined up in time").isLessThan(deadline);
            Thread.sleep(5);
        }
    }

    @Test
    void aTenantArrivingBehindAnothersBacklogRunsNextNotLast() throws Exception {
        FairLookups gate = new FairLookups(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> order = new CopyOnWriteArrayList<>();
        List<Thread> threads = new ArrayList<>();
        // tenant a holds the only turn, and lines up five more lookups behind it
        threads.add(Thread.ofPlatform()
                .start(() -> gate.run("a", () -> {
                    awaitQuietly(release);
                    order.add("a0");
                    return null;
                })));
        awaitWaiting(threads, 1); // a0 is in, parked on the latch
        for (int i = 1; i <= 5; i++) {
            String name = "a" + i;
            threads.add(Thread.ofPlatform().start(() -> gate.run("a", () -> order.add(name))));
            awaitWaiting(threads, 1 + i);
        }
        // then tenant b asks, last of all
        threads.add(Thread.ofPlatform().start(() -> gate.run("b", () -> order.add("b0"))));
        awaitWaiting(threads, 7);
        release.countDown();
        for (Thread t : threads) {
            t.join(10_000);
        }
        assertThat(order).containsExactly("a0", "a1", "b0", "a2", "a3", "a4", "a5");
    }

    @Test
    void neverMoreRunThanTurnsAndEveryLookupOfEveryTenantRuns() throws Exception {
        FairLookups gate = new FairLookups(3);
        AtomicInteger running = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 2_000; i++) {
                String tenant = "t" + new SplittableRandom(i).nextInt(5);
                calls.add(threads.submit(() -> gate.run(tenant, () -> {
                    most.accumulateAndGet(running.incrementAndGet(), Math::max);
                    Thread.onSpinWait();
                    running.decrementAndGet();
                    return done.incrementAndGet();
                })));
            }
            for (Future<?> c : calls) {
                c.get(30, TimeUnit.SECONDS);
            }
        }
        assertThat(done).hasValue(2_000);
        assertThat(most.get()).isBetween(1, 3);
        // every turn came back: three lookups run at once again, with no wait
        CountDownLatch in = new CountDownLatch(3);
        CountDownLatch out = new CountDownLatch(1);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 3; i++) {
                threads.submit(() -> gate.run("x", () -> {
                    in.countDown();
                    awaitQuietly(out);
                    return null;
                }));
            }
            assertThat(in.await(10, TimeUnit.SECONDS)).isTrue();
            out.countDown();
        }
    }

    @Test
    void aWaiterInterruptedBeforeItsTurnLeavesTheLineAndTakesNoTurn() throws Exception {
        FairLookups gate = new FairLookups(1);
        CountDownLatch release = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        threads.add(Thread.ofPlatform()
                .start(() -> gate.run("a", () -> {
                    awaitQuietly(release);
                    return null;
                })));
        awaitWaiting(threads, 1);
        List<Throwable> failed = new CopyOnWriteArrayList<>();
        Thread interrupted = Thread.ofPlatform().start(() -> {
            try {
                gate.run("b", () -> null);
            } catch (TooManyRequestsException e) {
                failed.add(e);
            }
        });
        threads.add(interrupted);
        awaitWaiting(threads, 2);
        interrupted.interrupt();
        interrupted.join(10_000);
        assertThat(failed)
                .singleElement()
                .satisfies(e -> assertThat(e.getMessage()).contains("interrupted"));
        release.countDown();
        threads.getFirst().join(10_000);
        // the turn a0 gave back is free: a new lookup runs at once
        assertThat(gate.run("c", () -> "ran")).isEqualTo("ran");
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
