package io.kvstore.nixl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.ffm.nixl.Nixl;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class NixlBackendProbeTest {

    private static final Availability NIXL = Availability.available("libnixl_capi at /opt/nixl/lib/libnixl_capi.so");
    private static final Availability NO_NIXL = Availability.unavailable("libnixl_capi not found; tried /a, /b");
    private static final Availability CUFILE =
            Availability.available("libcufile at /usr/local/cuda/lib64/libcufile.so");
    private static final Availability NO_CUFILE = Availability.unavailable("libcufile not found; tried /c");

    @ParameterizedTest(name = "{0} with nixl={1}, cufile={2}, plugins [{3}] -> {4}")
    @CsvSource(
            delimiter = '|',
            value = {
                "UCX    | true  | false | UCX POSIX       | true  | plugin UCX of libnixl_capi at /opt/nixl/lib/libnixl_capi.so",
                "UCX    | false | true  | UCX             | false | NIXL itself is unavailable: libnixl_capi not found; tried /a, /b",
                "GDS    | false | true  | GDS             | false | NIXL itself is unavailable",
                "POSIX  | true  | false | UCX             | false | NIXL has no POSIX plugin (libplugin_POSIX.so); it found [UCX] in /opt/nixl/lib/plugins (NIXL_PLUGIN_DIR unset)",
                "GDS_MT | true  | false | UCX GDS_MT      | false | NIXL plugin GDS_MT needs libcufile: libcufile not found; tried /c",
                "GDS_MT | true  | true  | UCX GDS_MT      | true  | plugin GDS_MT of libnixl_capi at /opt/nixl/lib/libnixl_capi.so; libcufile at",
                "GDS    | true  | true  | UCX GDS_MT      | false | NIXL has no GDS plugin",
                "POSIX  | true  | false | BROKEN          | false | NIXL has no POSIX plugin",
                "BROKEN | true  | false | UCX BROKEN      | false | NIXL plugin BROKEN cannot be loaded: libplugin_BROKEN.so: libdep.so.0: cannot open shared object file",
            })
    void answersWithTheFirstMissingPiece(
            String backend, boolean nixl, boolean cufile, String plugins, boolean available, String detail) {
        var probe = new NixlBackendProbe(
                () -> nixl ? NIXL : NO_NIXL,
                () -> cufile ? CUFILE : NO_CUFILE,
                () -> List.of(plugins.split(" ")),
                () -> "/opt/nixl/lib/plugins (NIXL_PLUGIN_DIR unset)",
                name -> name.equals("BROKEN")
                        ? Optional.of("libplugin_BROKEN.so: libdep.so.0: cannot open shared object file")
                        : Optional.empty());
        Availability answer = probe.probe(backend);
        assertThat(answer.available()).isEqualTo(available);
        assertThat(answer.detail()).startsWith(detail);
    }

    @Test
    void pluginListIsAskedOnceForAllBackends() {
        AtomicInteger asked = new AtomicInteger();
        var probe = new NixlBackendProbe(
                () -> NIXL,
                () -> CUFILE,
                () -> {
                    asked.incrementAndGet();
                    return List.of("UCX", "GDS");
                },
                () -> "/p",
                name -> Optional.empty());
        probe.probe("UCX");
        probe.probe("GDS");
        probe.probe("POSIX");
        assertThat(asked).hasValue(1);
    }

    @Test
    void thisMachinesProbeExplainsItselfAndNeverCrashes() {
        var probe = NixlBackendProbe.ofThisMachine();
        for (String backend : List.of("UCX", "GDS", "GDS_MT", "POSIX")) {
            Availability answer = probe.probe(backend);
            System.out.println("NIXL backend " + backend + ": " + answer);
            assertThat(answer.detail()).isNotBlank();
            if (!Nixl.availability().available()) {
                assertThat(answer)
                        .isEqualTo(Availability.unavailable("NIXL itself is unavailable: "
                                + Nixl.availability().detail()));
            } else if (backend.startsWith("GDS") && !CuFile.availability().available()) {
                assertThat(answer.available()).isFalse();
            }
        }
        var resolved = NixlBackendSelection.resolve(System.getenv(), java.util.Map.of(), false, probe);
        System.out.println(resolved.summary());
        assertThat(resolved.summary()).startsWith("NIXL backends: ");
    }
}
