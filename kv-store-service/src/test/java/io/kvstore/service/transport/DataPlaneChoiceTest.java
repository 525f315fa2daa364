package io.kvstore.service.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.ffm.Availability;
import io.kvstore.service.config.KvStoreProperties.Transport.DataPlane;
import io.kvstore.service.transport.DataPlaneChoice.Plane;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DataPlaneChoiceTest {

    private static final Availability NIXL = Availability.available("plugin UCX of libnixl_capi at /opt/nixl");
    private static final Availability NO_NIXL = Availability.unavailable("NIXL itself is unavailable: not found");
    private static final Availability UCP = Availability.available("libucp 1.13.1");
    private static final Availability NO_UCP = Availability.unavailable("libucp not found");

    @ParameterizedTest(name = "enabled={0} ucx={1} {2} nixl={3} ucp={4} -> {5}")
    @CsvSource(
            delimiter = '|',
            value = {
                "true  | true  | AUTO | true  | true  | UCX  | kvstore.transport.data-plane=auto; direct libucp, faster than NIXL on one host (docs/benchmarks.md); NIXL loads too: kvstore.transport.data-plane=nixl selects it",
                "true  | true  | AUTO | false | true  | UCX  | kvstore.transport.data-plane=auto; direct libucp, faster than NIXL on one host (docs/benchmarks.md); NIXL not available (NIXL itself is unavailable: not found)",
                "true  | true  | AUTO | true  | false | NIXL | kvstore.transport.data-plane=auto; direct libucp unavailable (libucp not found), NIXL's UCX backend loads",
                "true  | true  | AUTO | false | false | none | neither NIXL's UCX backend (NIXL itself is unavailable: not found) nor direct libucp (libucp not found)",
                "true  | true  | UCX  | true  | true  | UCX  | kvstore.transport.data-plane=ucx",
                "true  | true  | NIXL | true  | false | NIXL | kvstore.transport.data-plane=nixl",
                "true  | false | NIXL | true  | true  | none | UCX is not among the selected DYN_KVBM_NIXL_BACKEND_* backends",
                "false | true  | AUTO | true  | true  | none | disabled by kvstore.transport.enabled=false",
            })
    void autoPrefersDirectUcxThenNixlAndSaysWhy(
            boolean enabled, boolean ucx, DataPlane request, boolean nixl, boolean ucp, String plane, String why) {
        var d = DataPlaneChoice.decide(enabled, ucx, request, nixl ? NIXL : NO_NIXL, ucp ? UCP : NO_UCP);
        assertThat(d.plane() == null ? "none" : d.plane().name()).isEqualTo(plane);
        assertThat(d.why()).startsWith(why);
        assertThat(d.summary()).isEqualTo("one-sided data plane: " + plane + " (" + d.why() + ")");
    }

    @ParameterizedTest
    @CsvSource({"NIXL, NIXL's UCX backend is unavailable: NIXL itself", "UCX, libucp is unavailable: libucp not found"})
    void aForcedPlaneThatCannotRunStopsStartUpNamingTheWayOut(DataPlane request, String reason) {
        assertThatThrownBy(() -> DataPlaneChoice.decide(true, true, request, NO_NIXL, NO_UCP))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("kvstore.transport.data-plane=" + request + " but " + reason)
                .hasMessageContaining("kvstore.transport.data-plane=auto");
        assertThat(Plane.valueOf(request.name()).name()).isEqualTo(request.name());
    }
}
