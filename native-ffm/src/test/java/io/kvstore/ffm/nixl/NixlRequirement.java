package io.kvstore.ffm.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.util.List;
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

    /** {@link #assumeNixl} of a NIXL whose UCX plugin loads and is offered to an agent. */
    static void assumeUcx() {
        assumeNixl(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        assumeNixl(
                Nixl.get().pluginLoadError("UCX").isEmpty(),
                () -> "skipped: NIXL's UCX plugin cannot be loaded: "
                        + Nixl.get().pluginLoadError("UCX").orElse(""));
        try (NixlAgent probe = Nixl.get().createAgent("kvstore-probe", new NixlAgent.Config(false, 0))) {
            List<String> plugins = probe.availablePlugins();
            assumeNixl(
                    plugins.contains("UCX"),
                    () -> "skipped: NIXL has no UCX plugin; found " + plugins + " in "
                            + Nixl.get().pluginDir().map(Path::toString).orElse("plugins/ beside libnixl"));
        }
    }
}
