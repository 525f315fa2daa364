package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.ffm.nixl.Nixl;
import java.util.function.Supplier;

/**
 * Skips a test for want of NIXL, with the reason, unless the environment promised NIXL
 * ({@code KVSTORE_REQUIRE_NIXL=1}, set by {@code .ci/run} when it provides a NIXL build): then the
 * missing NIXL is a failure, so CI proves the NIXL path on every run instead of skipping it quietly.
 */
final class NixlRequirement {

    private NixlRequirement() {}

    static void assumeNixl(boolean usable, Supplier<String> reason) {
        if (Nixl.requiredHere()) {
            assertThat(usable)
                    .as(() -> Nixl.REQUIRE_VARIABLE + " is set, so NIXL must be usable here, but: " + reason.get())
                    .isTrue();
        } else {
            assumeTrue(usable, reason);
        }
    }
}
