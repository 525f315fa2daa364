package io.kvstore.nixl;

import io.kvstore.ffm.Availability;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Which NIXL backends kvstore uses, from {@code DYN_KVBM_NIXL_BACKEND_<NAME>} variables (Dynamo KVBM's
 * names and rules) and the equivalent configuration map, the environment winning per name.
 *
 * <p>Values are trimmed and case-insensitive: {@code true|1|on|yes} enable, {@code false|0|off|no}
 * disable, anything else is a start-up error naming the variable and the allowed values. Names may
 * contain underscores ({@code GDS_MT}). With no backend named anywhere, UCX alone is enabled. When every
 * named backend is disabled the set is empty: that is what the operator asked for, and the service then
 * moves blocks over HTTP only. An enabled backend whose library is unavailable fails start-up, unless
 * {@code requireBackends} is false, in which case it is reported unavailable and not used.
 *
 * <p>A pure function of its inputs so every rule is table-tested; the service calls it once at
 * start-up with {@code System.getenv()}, its bound {@code kvstore.nixl.backends} map,
 * {@code kvstore.nixl.require-backends} and {@link NixlBackendProbe#probe}, logs {@link Resolved#summary()}
 * and shows it with {@link Resolved#availability()} in health.
 */
public final class NixlBackendSelection {

    /** The environment variable prefix. */
    public static final String PREFIX = "DYN_KVBM_NIXL_BACKEND_";

    private static final Set<String> TRUE = Set.of("true", "1", "on", "yes");
    private static final Set<String> FALSE = Set.of("false", "0", "off", "no");

    private NixlBackendSelection() {}

    /**
     * The resolved choice.
     *
     * @param enabled backends enabled and usable (their library is available): the ones to create
     * @param availability every enabled backend's probe answer, usable or not (shown in health)
     * @param sources where each named backend's setting came from ("environment", "configuration",
     *     "default"), disabled ones included
     */
    public record Resolved(Set<String> enabled, Map<String, Availability> availability, Map<String, String> sources) {

        public Resolved {
            enabled = Collections.unmodifiableSet(new TreeSet<>(enabled));
            availability = Collections.unmodifiableMap(new TreeMap<>(availability));
            sources = Collections.unmodifiableMap(new TreeMap<>(sources));
        }

        /** Enabled backends that are not used because their library is missing, with the reason. */
        public Map<String, String> unavailable() {
            Map<String, String> missing = new TreeMap<>();
            availability.forEach((name, a) -> {
                if (!a.available()) {
                    missing.put(name, a.detail());
                }
            });
            return missing;
        }

        /** One line for the start-up log and health, e.g. {@code NIXL backends: UCX; enabled but unavailable: GDS (...)}. */
        public String summary() {
            String used = enabled.isEmpty() ? "none (HTTP data plane only)" : String.join(", ", enabled);
            Map<String, String> missing = unavailable();
            String tail = missing.isEmpty()
                    ? ""
                    : "; enabled but unavailable: "
                            + missing.entrySet().stream()
                                    .map(e -> e.getKey() + " (" + e.getValue() + ")")
                                    .collect(Collectors.joining(", "));
            return "NIXL backends: " + used + tail;
        }
    }

    /**
     * Resolves the backend set.
     *
     * @param environment the process environment (only {@code DYN_KVBM_NIXL_BACKEND_*} entries are read)
     * @param configured backend name to value from configuration (same values as the environment)
     * @param requireBackends whether an enabled backend whose library is unavailable fails start-up
     * @param probe a backend's availability (library and plugin present)
     * @throws IllegalArgumentException naming the variable or property and the allowed values
     * @throws IllegalStateException when a required backend is unavailable, with the reason
     */
    public static Resolved resolve(
            Map<String, String> environment,
            Map<String, ?> configured,
            boolean requireBackends,
            Function<String, Availability> probe) {
        Map<String, Boolean> choice = new TreeMap<>();
        Map<String, String> sources = new TreeMap<>();
        Map<String, String> origins = new TreeMap<>();
        new TreeMap<>(configured).forEach((name, value) -> {
            String origin = "kvstore.nixl.backends." + name;
            String backend = normalise(name, origin);
            put(choice, origins, backend, parse(value == null ? null : String.valueOf(value), origin), origin);
            sources.put(backend, "configuration");
        });
        origins.clear(); // the environment overrides configuration; only clashes within the environment are errors
        new TreeMap<>(environment).forEach((variable, value) -> {
            if (variable.startsWith(PREFIX)) {
                String backend = normalise(variable.substring(PREFIX.length()), variable);
                put(choice, origins, backend, parse(value, variable), variable);
                sources.put(backend, "environment");
            }
        });
        if (choice.isEmpty()) {
            choice.put("UCX", true);
            sources.put("UCX", "default");
        }
        Set<String> enabled = new TreeSet<>();
        Map<String, Availability> availability = new TreeMap<>();
        for (var entry : choice.entrySet()) {
            if (!entry.getValue()) {
                continue;
            }
            Availability found = probe.apply(entry.getKey());
            availability.put(entry.getKey(), found);
            if (found.available()) {
                enabled.add(entry.getKey());
            } else if (requireBackends) {
                throw new IllegalStateException(
                        "NIXL backend " + entry.getKey() + " is enabled (" + sources.get(entry.getKey())
                                + ") but unavailable: " + found.detail() + "; install it, disable it with "
                                + PREFIX + entry.getKey() + "=false, or set kvstore.nixl.require-backends=false");
            }
        }
        return new Resolved(enabled, availability, sources);
    }

    /** Records one setting; two spellings of one backend from the same source (gds and GDS) must agree. */
    private static void put(
            Map<String, Boolean> choice, Map<String, String> origins, String backend, boolean value, String origin) {
        String earlier = origins.putIfAbsent(backend, origin);
        if (earlier != null && choice.get(backend) != value) {
            throw new IllegalArgumentException(
                    earlier + " and " + origin + " both set NIXL backend " + backend + " but disagree; keep one");
        }
        choice.put(backend, value);
    }

    private static String normalise(String name, String origin) {
        String upper = name.trim().toUpperCase(Locale.ROOT);
        if (upper.isEmpty() || !upper.matches("[A-Z0-9]+(_[A-Z0-9]+)*")) {
            throw new IllegalArgumentException(
                    origin + ": '" + name + "' is not a backend name (letters, digits, single underscores)");
        }
        return upper;
    }

    private static boolean parse(String value, String origin) {
        String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
        if (TRUE.contains(v)) {
            return true;
        }
        if (FALSE.contains(v)) {
            return false;
        }
        throw new IllegalArgumentException(origin + "='" + value + "' is not allowed; use true, 1, on, yes to enable "
                + "or false, 0, off, no to disable");
    }
}
