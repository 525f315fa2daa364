package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code kvstore_reservations_expired_total} as {@code /actuator/prometheus} shows it: the sign that the service's
 * sweep has expired a reservation, which a test waits for instead of sleeping past the expiry and hoping the sweep
 * (about once a second, later on a loaded machine) has run.
 */
final class ExpiredReservations {

    private static final Pattern COUNTER =
            Pattern.compile("(?m)^kvstore_reservations_expired_total(?:\\{\\})? (\\S+)$");

    private ExpiredReservations() {}

    /** The counter now. */
    static long count(Http http) throws Exception {
        var r = http.get("/actuator/prometheus");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        Matcher m = COUNTER.matcher(r.body());
        assertThat(m.find())
                .as("kvstore_reservations_expired_total is exported")
                .isTrue();
        return (long) Double.parseDouble(m.group(1));
    }

    /** Waits up to 30 s for the counter to reach {@code atLeast}; asserts it did. */
    static void await(Http http, long atLeast) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long now = count(http);
        while (now < atLeast && System.nanoTime() < deadline) {
            Thread.sleep(100);
            now = count(http);
        }
        assertThat(now)
                .as("reservations expired (kvstore_reservations_expired_total)")
                .isGreaterThanOrEqualTo(atLeast);
    }
}
