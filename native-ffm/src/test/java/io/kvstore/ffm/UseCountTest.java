package io.kvstore.ffm;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class UseCountTest {

    @Test
    void closeWaitsForTheUsesUnderWayAndRefusesNewOnes() throws Exception {
        UseCount uses = new UseCount();
        assertThat(uses.tryEnter()).isTrue();
        assertThat(uses.tryEnter()).isTrue();

        CompletableFuture<Boolean> closing = CompletableFuture.supplyAsync(uses::closeAndAwait);
        uses.exit();
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
}
