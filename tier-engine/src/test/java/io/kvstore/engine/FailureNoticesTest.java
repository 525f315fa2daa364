package io.kvstore.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * When a failing copier is worth a log line: once when it starts failing, once when it works again, never per
 * block.
 */
class FailureNoticesTest {

    private static final long MINUTE = Duration.ofMinutes(1).toNanos();

    @Test
    void aSpellOfFailuresIsSaidWhenItStartsAndWhenItEnds() {
        FailureNotices notices = new FailureNotices(MINUTE);
        assertThat(notices.failing()).isNull();

        assertThat(notices.failed("disk gone", 0)).as("the first failure").isTrue();
        assertThat(notices.failed("disk gone", 10)).as("the same spell").isFalse();
        assertThat(notices.failed("still gone", 20)).isFalse();
        assertThat(notices.failing()).isEqualTo("still gone");

        assertThat(notices.worked()).as("the end of a spell that was said").isTrue();
        assertThat(notices.worked()).as("working on").isFalse();
        assertThat(notices.failing()).isNull();
    }

    @Test
    void aCopierThatFailsEveryOtherCallIsSaidAtMostOnceAMinute() {
        FailureNotices notices = new FailureNotices(MINUTE);
        int said = 0;
        int endsSaid = 0;
        long now = 0;
        for (int i = 0; i < 10_000; i++, now += Duration.ofMillis(1).toNanos()) { // 10 s of flapping
            said += notices.failed("EIO", now) ? 1 : 0;
            endsSaid += notices.worked() ? 1 : 0;
        }
        assertThat(said).isEqualTo(1);
        assertThat(endsSaid).isEqualTo(1);

        long aMinuteLater = MINUTE + Duration.ofSeconds(1).toNanos();
        assertThat(notices.failed("EIO", aMinuteLater))
                .as("a minute after the last line")
                .isTrue();
        assertThat(notices.worked()).isTrue();
    }

    @Test
    void aSpellWhoseStartWasNotSaidEndsQuietlyButIsStillReported() {
        FailureNotices notices = new FailureNotices(MINUTE);
        assertThat(notices.failed("EIO", 0)).isTrue();
        assertThat(notices.worked()).isTrue();
        assertThat(notices.failed("ENOSPC", 5)).as("within the minute").isFalse();
        assertThat(notices.failing()).as("shown to operators all the same").isEqualTo("ENOSPC");
        assertThat(notices.worked()).as("its end is not said either").isFalse();
        assertThat(notices.failing()).isNull();
    }
}
