package io.kvstore.service.transport;

import io.kvstore.ffm.Availability;
import io.kvstore.service.config.KvStoreProperties.Transport.DataPlane;

/**
 * Which library carries the one-sided data plane: direct libucp or a NIXL agent (NIXL's UCX backend).
 * {@code auto} takes direct libucp when it loads, because it measured faster on one host (docs/benchmarks.md:
 * its DRAM tier lives in UCX-allocated shared memory that a local engine copies into and out of, while
 * NIXL's UCX backend ends up on TCP with emulated RMA under UCX 1.13), and NIXL when only NIXL loads;
 * {@code nixl} or {@code ucx} forces one. A pure function of its inputs so every rule is table-tested; {@link TransportService} calls
 * it once at start-up, logs {@link Decision#summary()} and shows the decision in health, {@code
 * /v1/transport} and {@code /admin/backends}.
 */
public final class DataPlaneChoice {

    private DataPlaneChoice() {}

    /** The libraries the one-sided path can run on. */
    public enum Plane {
        /** A NIXL agent with the UCX backend (libnixl_capi and libplugin_UCX). */
        NIXL,
        /** Direct libucp: this project's own UCX worker. */
        UCX
    }

    /**
     * The decision.
     *
     * @param plane the library to start, or null when the one-sided path is off
     * @param why why this plane (or why none), for the start-up log and health
     */
    public record Decision(Plane plane, String why) {

        public boolean enabled() {
            return plane != null;
        }

        /** One line, e.g. {@code one-sided data plane: NIXL (kvstore.transport.data-plane=auto and ...)}. */
        public String summary() {
            return "one-sided data plane: " + (plane == null ? "none" : plane.name()) + " (" + why + ")";
        }
    }

    /**
     * Decides.
     *
     * @param transportEnabled {@code kvstore.transport.enabled}
     * @param ucxSelected whether the {@code DYN_KVBM_NIXL_BACKEND_*} choice enables UCX
     * @param request {@code kvstore.transport.data-plane}
     * @param nixlUcx whether NIXL and its UCX plugin load here, or why not
     * @param directUcx whether libucp loads here, or why not
     * @throws IllegalStateException when the request forces a plane that cannot run here: the operator
     *     asked for it by name, so starting on another would hide the problem
     */
    public static Decision decide(
            boolean transportEnabled,
            boolean ucxSelected,
            DataPlane request,
            Availability nixlUcx,
            Availability directUcx) {
        if (!transportEnabled) {
            return new Decision(null, "disabled by kvstore.transport.enabled=false");
        }
        if (!ucxSelected) {
            return new Decision(null, "UCX is not among the selected DYN_KVBM_NIXL_BACKEND_* backends");
        }
        String setting = "kvstore.transport.data-plane=" + request;
        return switch (request) {
            case NIXL -> {
                if (!nixlUcx.available()) {
                    throw new IllegalStateException(
                            setting + " but NIXL's UCX backend is unavailable: " + nixlUcx.detail()
                                    + "; install NIXL with its UCX plugin (NIXL_LIB_DIR, NIXL_PLUGIN_DIR) or set "
                                    + "kvstore.transport.data-plane=auto");
                }
                yield new Decision(Plane.NIXL, setting);
            }
            case UCX -> {
                if (!directUcx.available()) {
                    throw new IllegalStateException(setting + " but libucp is unavailable: " + directUcx.detail()
                            + "; install UCX (libucx0) or set kvstore.transport.data-plane=auto");
                }
                yield new Decision(Plane.UCX, setting);
            }
            case AUTO -> {
                // measured on one host (docs/benchmarks.md, DataPlaneBandwidth): direct UCX with the DRAM tier in
                // UCX-allocated shared memory moves 2 MiB blocks one-sided at memory speed, while NIXL's UCX backend
                // (peer error handling, which UCX 1.13's shared-memory transports lack) runs on TCP with emulated RMA
                if (directUcx.available()) {
                    yield new Decision(
                            Plane.UCX,
                            setting + "; direct libucp, faster than NIXL on one host (docs/benchmarks.md)"
                                    + (nixlUcx.available()
                                            ? "; NIXL loads too: kvstore.transport.data-plane=nixl selects it"
                                            : "; NIXL not available (" + nixlUcx.detail() + ")"));
                }
                if (nixlUcx.available()) {
                    yield new Decision(
                            Plane.NIXL,
                            setting + "; direct libucp unavailable (" + directUcx.detail()
                                    + "), NIXL's UCX backend loads: " + nixlUcx.detail());
                }
                yield new Decision(
                        null,
                        "neither NIXL's UCX backend (" + nixlUcx.detail() + ") nor direct libucp (" + directUcx.detail()
                                + ") is available");
            }
        };
    }
}
