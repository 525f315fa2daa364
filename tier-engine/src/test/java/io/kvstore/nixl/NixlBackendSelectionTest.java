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
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

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
    @CsvSource(
            delimiter = '|',
            nullValues = "-",
            value = {
                "-                                                        | -                  | UCX",
                "DYN_KVBM_NIXL_BACKEND_UCX=false;DYN_KVBM_NIXL_BACKEND_GDS=false | -         | -",
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
    @CsvSource(
            delimiter = '|',
            value = {
                "DYN_KVBM_NIXL_BACKEND_UCX=maybe | DYN_KVBM_NIXL_BACKEND_UCX='maybe'",
                "DYN_KVBM_NIXL_BACKEND_GDS_MT=   | DYN_KVBM_NIXL_BACKEND_GDS_MT=''",
                "DYN_KVBM_NIXL_BACKEND_UCX=2     | true, 1, on, yes",
            })
    void invalidValueIsAStartUpErrorNamingTheVariable(String env, String message) {
        assertThatThrownBy(() -> NixlBackendSelection.resolve(pairs(env), Map.of(), true, ALL_PRESENT))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(message)
                .hasMessageContaining("false, 0, off, no");
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {"DYN_KVBM_NIXL_BACKEND_=true", "DYN_KVBM_NIXL_BACKEND_GDS__MT=true"})
    void malformedBackendNameIsRefused(String env) {
        assertThatThrownBy(() -> NixlBackendSelection.resolve(pairs(env), Map.of(), true, ALL_PRESENT))
                .hasMessageContaining("is not a backend name");
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {"true", "false"})
    void unavailableLibraryFailsStartUpOnlyWhenRequired(boolean required) {
        Function<String, Availability> noGds = name -> name.startsWith("GDS")
                ? Availability.unavailable("libcufile not found")
                : Availability.available("test");
        Map<String, String> env = pairs("DYN_KVBM_NIXL_BACKEND_GDS=true;DYN_KVBM_NIXL_BACKEND_UCX=true");
        if (required) {
            assertThatThrownBy(() -> NixlBackendSelection.resolve(env, Map.of(), true, noGds))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("GDS")
                    .hasMessageContaining("libcufile not found")
                    .hasMessageContaining("kvstore.nixl.require-backends=false");
        } else {
            var resolved = NixlBackendSelection.resolve(env, Map.of(), false, noGds);
            assertThat(resolved.enabled()).containsExactly("UCX");
            assertThat(resolved.unavailable()).containsEntry("GDS", "libcufile not found");
            assertThat(resolved.summary())
                    .isEqualTo("NIXL backends: UCX; enabled but unavailable: GDS (libcufile not found)");
            assertThat(resolved.sources()).containsEntry("GDS", "environment");
        }
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {"DYN_KVBM_NIXL_BACKEND_UCX=false | NIXL backends: none (HTTP data plane only)"})
    void everythingDisabledIsReportedNotRefused(String env, String summary) {
        assertThat(NixlBackendSelection.resolve(pairs(env), Map.of(), true, ALL_PRESENT)
                        .summary())
                .isEqualTo(summary);
    }

    @ParameterizedTest(name = "[{0}] -> {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "'  true  '  | true", "'\tYES\n' | true", "On         | true", "1  | true",
                "' off '     | false", "NO        | false", "False      | false", "0  | false",
            })
    void valuesAreTrimmedAndCaseInsensitive(String value, boolean enabled) {
        var resolved =
                NixlBackendSelection.resolve(Map.of("DYN_KVBM_NIXL_BACKEND_POSIX", value), Map.of(), true, ALL_PRESENT);
        assertThat(resolved.enabled().contains("POSIX")).isEqualTo(enabled);
        assertThat(resolved.sources()).containsEntry("POSIX", "environment");
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "DYN_KVBM_NIXL_BACKEND_GDS_MT          | GDS_MT",
                "DYN_KVBM_NIXL_BACKEND_OBJ_S3_CRT      | OBJ_S3_CRT",
                "DYN_KVBM_NIXL_BACKEND_UCX_MO          | UCX_MO",
                "DYN_KVBM_NIXL_BACKEND_Libfabric       | LIBFABRIC",
            })
    void everythingAfterThePrefixIsTheBackendNameUnderscoresIncluded(String variable, String backend) {
        var resolved = NixlBackendSelection.resolve(Map.of(variable, "true"), Map.of(), true, ALL_PRESENT);
        assertThat(resolved.enabled()).containsExactly(backend);
        assertThat(resolved.availability()).containsOnlyKeys(backend);
    }

    @ParameterizedTest(name = "config {0}, env {1} -> {2}")
    @MethodSource("environmentOverridesConfiguration")
    void environmentWinsPerBackendOverConfiguration(
            Map<String, Object> config, Map<String, String> env, Set<String> expected, Map<String, String> sources) {
        var resolved = NixlBackendSelection.resolve(env, config, true, ALL_PRESENT);
        assertThat(resolved.enabled()).isEqualTo(expected);
        assertThat(resolved.sources()).isEqualTo(sources);
    }

    static Stream<Arguments> environmentOverridesConfiguration() {
        return Stream.of(
                Arguments.of(Map.of("GDS_MT", true), Map.of(), Set.of("GDS_MT"), Map.of("GDS_MT", "configuration")),
                Arguments.of(
                        Map.of("GDS_MT", true, "UCX", "yes"),
                        Map.of("DYN_KVBM_NIXL_BACKEND_GDS_MT", "off"),
                        Set.of("UCX"),
                        Map.of("GDS_MT", "environment", "UCX", "configuration")),
                Arguments.of(
                        Map.of("UCX", false),
                        Map.of("DYN_KVBM_NIXL_BACKEND_UCX", "1"),
                        Set.of("UCX"),
                        Map.of("UCX", "environment")),
                Arguments.of(Map.of("ucx", false), Map.of(), Set.of(), Map.of("UCX", "configuration")),
                Arguments.of(Map.of(), Map.of(), Set.of("UCX"), Map.of("UCX", "default")),
                Arguments.of(
                        Map.of("POSIX", true),
                        Map.of("DYN_KVBM_NIXL_BACKEND_UCX", "true"),
                        Set.of("POSIX", "UCX"),
                        Map.of("POSIX", "configuration", "UCX", "environment")));
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "GDS | enabled | kvstore.nixl.backends.GDS='enabled' is not allowed",
                "UCX | ''      | kvstore.nixl.backends.UCX='' is not allowed",
            })
    void invalidConfiguredValueNamesTheProperty(String backend, String value, String message) {
        assertThatThrownBy(() -> NixlBackendSelection.resolve(Map.of(), Map.of(backend, value), true, ALL_PRESENT))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(message)
                .hasMessageContaining("true, 1, on, yes");
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {"true | false", "false | true"})
    void twoSpellingsOfOneBackendThatDisagreeAreRefused(String lower, String upper) {
        Map<String, String> env = Map.of("DYN_KVBM_NIXL_BACKEND_gds", lower, "DYN_KVBM_NIXL_BACKEND_GDS", upper);
        assertThatThrownBy(() -> NixlBackendSelection.resolve(env, Map.of(), true, ALL_PRESENT))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("DYN_KVBM_NIXL_BACKEND_GDS")
                .hasMessageContaining("DYN_KVBM_NIXL_BACKEND_gds")
                .hasMessageContaining("disagree");
    }

    @ParameterizedTest(name = "require={0}, env [{1}] -> enabled [{2}]")
    @CsvSource(
            delimiter = '|',
            nullValues = "-",
            value = {
                "false | -                                                         | -",
                "false | DYN_KVBM_NIXL_BACKEND_GDS_MT=1;DYN_KVBM_NIXL_BACKEND_POSIX=1 | POSIX",
                "false | DYN_KVBM_NIXL_BACKEND_UCX=0;DYN_KVBM_NIXL_BACKEND_POSIX=1   | POSIX",
                "true  | DYN_KVBM_NIXL_BACKEND_UCX=0;DYN_KVBM_NIXL_BACKEND_POSIX=1   | POSIX",
                "true  | DYN_KVBM_NIXL_BACKEND_UCX=0;DYN_KVBM_NIXL_BACKEND_GDS_MT=0  | -",
            })
    void disabledBackendsAreNeverProbedAndUnavailableOnesReportedWhenNotRequired(
            boolean required, String env, String expected) {
        // UCX and GDS_MT are missing here; POSIX is present
        Function<String, Availability> probe = name -> name.equals("POSIX")
                ? Availability.available("plugin POSIX")
                : Availability.unavailable(name + " plugin missing");
        var resolved = NixlBackendSelection.resolve(pairs(env), Map.of(), required, probe);
        assertThat(resolved.enabled()).isEqualTo(set(expected));
        resolved.unavailable().forEach((name, reason) -> assertThat(reason).isEqualTo(name + " plugin missing"));
        assertThat(resolved.summary()).startsWith("NIXL backends: " + (expected == null ? "none" : expected));
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            nullValues = "-",
            value = {
                "DYN_KVBM_NIXL_BACKEND_UCX=yes    | UCX    | environment",
                "-                                | UCX    | default",
                "DYN_KVBM_NIXL_BACKEND_GDS_MT=yes | GDS_MT | environment",
            })
    void requiredButUnavailableBackendFailsStartUpNamingItsSourceAndTheWayOut(
            String env, String backend, String source) {
        Function<String, Availability> none = name -> Availability.unavailable("libnixl_capi not found; tried /x");
        assertThatThrownBy(
                        () -> NixlBackendSelection.resolve(env == null ? Map.of() : pairs(env), Map.of(), true, none))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("NIXL backend " + backend + " is enabled (" + source
                        + ") but unavailable: libnixl_capi not found; "
                        + "tried /x; install it, disable it with DYN_KVBM_NIXL_BACKEND_" + backend
                        + "=false, or set kvstore.nixl.require-backends=false");
    }
}
