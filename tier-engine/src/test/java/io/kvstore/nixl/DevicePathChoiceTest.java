package io.kvstore.nixl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.ffm.Availability;
import io.kvstore.nixl.DevicePathChoice.StoragePath;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The device tier's NIXL registration and storage path, decided from the flags as an operator sets them
 * ({@code DYN_KVBM_NIXL_BACKEND_*} through {@link NixlBackendSelection#resolve}) and from which plugins
 * and libraries load; runs on CPU, the GPU and GDS plugin being inputs here.
 */
class DevicePathChoiceTest {

    private static final Availability CUFILE = Availability.available("libcufile 1.14");
    private static final Availability NO_CUFILE = Availability.unavailable("libcufile not found");

    private static Map<String, String> env(String spec) {
        Map<String, String> map = new HashMap<>();
        if (!spec.equals("-")) {
            for (String pair : spec.split(";")) {
                String[] kv = pair.split("=", 2);
                map.put("DYN_KVBM_NIXL_BACKEND_" + kv[0], kv[1]);
            }
        }
        return map;
    }

    /** A probe under which the named plugins load and every other one is missing. */
    private static Function<String, Availability> plugins(String present) {
        Set<String> names = present.equals("-") ? Set.of() : new TreeSet<>(Set.of(present.split(" ")));
        return name -> names.contains(name)
                ? Availability.available("plugin " + name)
                : Availability.unavailable("NIXL has no " + name + " plugin");
    }

    @ParameterizedTest(name = "cuda={0} nixl-plane={1} flags [{2}] plugins [{3}] cufile={4} -> {5} vram={6}")
    @CsvSource(
            delimiter = '|',
            value = {
                // CUDA-backed tier, NIXL data plane: GDS_MT preferred over GDS, each only when on and loadable
                "true  | true  | GDS=1;GDS_MT=1;UCX=1  | UCX GDS GDS_MT | true  | NIXL_GDS_MT  | true  | DYN_KVBM_NIXL_BACKEND_GDS_MT is on and its plugin loads",
                "true  | true  | GDS=on;UCX=on         | UCX GDS        | true  | NIXL_GDS     | true  | DYN_KVBM_NIXL_BACKEND_GDS is on and its plugin loads",
                "true  | true  | GDS=1;GDS_MT=0;UCX=1  | UCX GDS GDS_MT | false | NIXL_GDS     | true  | DYN_KVBM_NIXL_BACKEND_GDS is on",
                // GDS on but NIXL's plugin missing: the existing cuFile path, or host memory without libcufile
                "true  | true  | GDS=yes;UCX=yes       | UCX            | true  | CUFILE       | true  | GDS is on but unusable: NIXL has no GDS plugin; libcufile directly: libcufile 1.14",
                "true  | true  | GDS=yes;UCX=yes       | UCX            | false | THROUGH_HOST | true  | GDS is on but unusable: NIXL has no GDS plugin; libcufile unavailable (libcufile not found)",
                // no GDS flag: host memory and O_DIRECT even where the plugin and libcufile exist
                "true  | true  | -                     | UCX GDS GDS_MT | true  | THROUGH_HOST | true  | neither DYN_KVBM_NIXL_BACKEND_GDS nor _GDS_MT is on",
                "true  | true  | GDS=false;UCX=true    | UCX GDS        | true  | THROUGH_HOST | true  | neither DYN_KVBM_NIXL_BACKEND_GDS nor _GDS_MT is on",
                // direct UCX data plane: no VRAM registration, storage path still by the flags
                "true  | false | GDS=1;UCX=1           | UCX GDS        | true  | NIXL_GDS     | false | DYN_KVBM_NIXL_BACKEND_GDS is on",
                // emulated device memory: never VRAM, never GDS
                "false | true  | GDS=1;GDS_MT=1;UCX=1  | UCX GDS GDS_MT | true  | THROUGH_HOST | false | emulated device memory has no DMA path to storage",
            })
    void picksThePathFromFlagsAndWhatLoads(
            boolean cuda,
            boolean nixlPlane,
            String flags,
            String present,
            boolean cufile,
            StoragePath expected,
            boolean vram,
            String why) {
        var resolved = NixlBackendSelection.resolve(env(flags), Map.of(), false, plugins(present));
        var d = DevicePathChoice.decide(cuda, nixlPlane, resolved, cufile ? CUFILE : NO_CUFILE);
        assertThat(d.storage()).isEqualTo(expected);
        assertThat(d.storageWhy()).contains(why);
        assertThat(d.registerVram()).isEqualTo(vram);
        assertThat(d.nixlBackend())
                .isEqualTo(
                        switch (expected) {
                            case NIXL_GDS_MT -> "GDS_MT";
                            case NIXL_GDS -> "GDS";
                            default -> null;
                        });
        assertThat(d.summary()).startsWith("device tier: " + (vram ? "registered as VRAM_SEG" : "not registered"));
    }

    @ParameterizedTest
    @CsvSource({
        "false, true, 'its memory is emulated (host memory), never registered as VRAM'",
        "true, false, the one-sided data plane is not a NIXL agent",
        "true, true, CUDA device memory and a NIXL data plane"
    })
    void vramRegistrationSaysWhy(boolean cuda, boolean nixlPlane, String why) {
        var resolved = NixlBackendSelection.resolve(Map.of(), Map.of(), false, plugins("UCX"));
        assertThat(DevicePathChoice.decide(cuda, nixlPlane, resolved, NO_CUFILE).vramWhy())
                .isEqualTo(why);
    }
}
