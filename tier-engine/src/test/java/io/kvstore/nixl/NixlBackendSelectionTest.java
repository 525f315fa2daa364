package io.kvstore.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.ffm.Availability;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class NixlBackendSelectionTest {

    private static final Function<String, Availability> ALL_PRESENT = name -> Availability.available("test");

    private static Map<String, String> pairs(String spec) {
        Map<String, String> map = new HashMap<>();
        if (spec != null && !spec.isBlank()) {
            for (String pair : spec.split(";")) {
                String[] kv = pair.split("=", 2);
                map.put(kv[0], kv[1]);
            }
        }
        return map;
    }

    private static Set<String> set(String spec) {
        return spec == null || spec.isBlank() ? Set.of() : new TreeSet<>(Arrays.asList(spec.split(" ")));
    }

    @ParameterizedTest(name = "env [{0}] config [{1}] -> [{2}]")
    @CsvSource(delimiter = '|', nullValues = "-", value = {
        "-                                                        | -                  | UCX",
        "DYN_KVBM_NIXL_BACKEND_UCX=true                           | -                  | UCX",
        "DYN_KVBM_NIXL_BACKEND_GDS_MT=1                           | -                  | GDS_MT",
        "DYN_KVBM_NIXL_BACKEND_GDS_MT=on;DYN_KVBM_NIXL_BACKEND_UCX=yes | -            | GDS_MT UCX",
        "DYN_KVBM_NIXL_BACKEND_UCX=  TRUE                         | -                  | UCX",
        "DYN_KVBM_NIXL_BACKEND_UCX=Off                            | -                  | -",
        "DYN_KVBM_NIXL_BACKEND_POSIX=No;DYN_KVBM_NIXL_BACKEND_GDS=0 | -                | -",
        "-                                                        | GDS=true           | GDS",
        "-                                                        | GDS=true;UCX=false | GDS",
        "DYN_KVBM_NIXL_BACKEND_GDS=false                          | GDS=true;UCX=true  | UCX",
        "DYN_KVBM_NIXL_BACKEND_GDS=yes                            | GDS=false          | GDS",
        "PATH=/usr/bin;DYN_KVBM_OTHER=1                           | -                  | UCX",
        "DYN_KVBM_NIXL_BACKEND_gds_mt=TRUE                        | -                  | GDS_MT",
    })
    void resolvesTheDocumentedRules(String env, String config, String expected) {
        var resolved = NixlBackendSelection.resolve(pairs(env), pairs(config), true, ALL_PRESENT);
        assertThat(resolved.enabled()).isEqualTo(set(expected));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "DYN_KVBM_NIXL_BACKEND_UCX=maybe | DYN_KVBM_NIXL_BACKEND_UCX='maybe'",
        "DYN_KVBM_NIXL_BACKEND_GDS_MT=   | DYN_KVBM_NIXL_BACKEND_GDS_MT=''",
        "DYN_KVBM_NIXL_BACKEND_UCX=2     | true, 1, on, yes",
    })
    void invalidValueIsAStartUpErrorNamingTheVariable(String env, String message) {
        assertThatThrownBy(() -> NixlBackendSelection.resolve(pairs(env), Map.of(), true, ALL_PRESENT))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(message)
                .hasMessageContaining("false, 0, off, no");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"DYN_KVBM_NIXL_BACKEND_=true", "DYN_KVBM_NIXL_BACKEND_GDS__MT=true"})
    void malformedBackendNameIsRefused(String env) {
        assertThatThrownBy(() -> NixlBackendSelection.resolve(pairs(env), Map.of(), true, ALL_PRESENT))
                .hasMessageContaining("is not a backend name");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"true", "false"})
    void unavailableLibraryFailsStartUpOnlyWhenRequired(boolean required) {
        Function<String, Availability> noGds = name -> name.startsWith("GDS")
                ? Availability.unavailable("libcufile not found") : Availability.available("test");
        Map<String, String> env = pairs("DYN_KVBM_NIXL_BACKEND_GDS=true;DYN_KVBM_NIXL_BACKEND_UCX=true");
        if (required) {
            assertThatThrownBy(() -> NixlBackendSelection.resolve(env, Map.of(), true, noGds))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("GDS").hasMessageContaining("libcufile not found")
                    .hasMessageContaining("kvstore.nixl.require-backends=false");
        } else {
            var resolved = NixlBackendSelection.resolve(env, Map.of(), false, noGds);
            assertThat(resolved.enabled()).containsExactly("UCX");
            assertThat(resolved.unavailable()).containsEntry("GDS", "libcufile not found");
            assertThat(resolved.summary()).isEqualTo("NIXL backends: UCX; enabled but unavailable: GDS (libcufile not found)");
            assertThat(resolved.sources()).containsEntry("GDS", "environment");
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"DYN_KVBM_NIXL_BACKEND_UCX=false | NIXL backends: none (HTTP data plane only)"})
    void everythingDisabledIsReportedNotRefused(String env, String summary) {
        assertThat(NixlBackendSelection.resolve(pairs(env), Map.of(), true, ALL_PRESENT).summary()).isEqualTo(summary);
    }
}
