package io.kvstore.concurrent;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class IntervalLogTest {

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final IntervalLog lines = new IntervalLog(Duration.ofSeconds(10), now::get);

    @Test
    void theFirstOccurrenceGetsALineAndTheNextLineCountsWhatCameBetween() {
        assertThat(lines.occurred()).as("first: a line, nothing unlogged").isZero();
        for (int i = 0; i < 41; i++) {
            now.addAndGet(Duration.ofMillis(200).toNanos());
            assertThat(lines.occurred()).as("within the interval: no line").isEqualTo(-1);
        }
        now.addAndGet(Duration.ofSeconds(2).toNanos());
        assertThat(lines.occurred())
                .as("past the interval: a line, 41 unlogged before it")
                .isEqualTo(41);
        assertThat(lines.occurred()).isEqualTo(-1);
    }

    @Test
    void theLineSaysHowManyWentUnlogged() {
        assertThat(IntervalLog.more(0, "request(s) answered 408")).isEmpty();
        assertThat(IntervalLog.more(41, "request(s) answered 408"))
                .isEqualTo("; 41 more request(s) answered 408 since the last such line");
    }
}
