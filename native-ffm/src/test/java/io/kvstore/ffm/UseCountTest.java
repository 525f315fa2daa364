package io.kvstore.ffm;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class UseCountTest {

    /** Each close on a thread of its own (the common pool may have a single thread on a small machine). */
    private static final Executor OWN_THREAD =
            task -> Thread.ofPlatform().daemon().start(task);

    @Test
    void closeWaitsForTheUsesUnderWayAndRefusesNewOnes() throws Exception {
        UseCount uses = new UseCount();
        assertThat(uses.tryEnter()).isTrue();
        assertThat(uses.tryEnter()).isTrue();

        CompletableFuture<Boolean> closing = CompletableFuture.supplyAsync(uses::closeAndAwait, OWN_THREAD);
        uses.exit();
        // close begins when its thread runs, which on a loaded machine may be seconds from now
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (uses.tryEnter()) {
            uses.exit();
            assertThat(System.nanoTime()).as("close began within 60 s").isLessThan(deadline);
            Thread.sleep(1);
        }
        try {
            closing.get(200, TimeUnit.MILLISECONDS);
            throw new AssertionError("close returned with a use still under way");
        } catch (TimeoutException expected) {
            // one use left
        }
        assertThat(uses.tryEnter()).as("a use begun once close began").isFalse();

        uses.exit();
        assertThat(closing.get(10, TimeUnit.SECONDS)).isTrue();
        assertThat(uses.tryEnter()).isFalse();
        assertThat(uses.closeAndAwait()).as("a second close").isFalse();
    }

    @Test
    void aSecondCloseAlsoWaitsForTheUsesUnderWay() throws Exception {
        UseCount uses = new UseCount();
        assertThat(uses.tryEnter()).isTrue();
        CompletableFuture<Boolean> first = CompletableFuture.supplyAsync(uses::closeAndAwait, OWN_THREAD);
        while (uses.tryEnter()) { // until the first close set the closed bit
            uses.exit();
            Thread.onSpinWait();
        }
        CompletableFuture<Boolean> second = CompletableFuture.supplyAsync(uses::closeAndAwait, OWN_THREAD);
        try {
            Boolean early = second.get(200, TimeUnit.MILLISECONDS);
            throw new AssertionError("a second close returned " + early + " with a use still under way");
        } catch (TimeoutException expected) {
            // its caller must not free what the use still works on
        }
        uses.exit();
        assertThat(first.get(10, TimeUnit.SECONDS)).isTrue();
        assertThat(second.get(10, TimeUnit.SECONDS))
                .as("only the first close closes")
                .isFalse();
    }
}
