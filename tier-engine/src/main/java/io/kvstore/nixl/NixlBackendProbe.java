package io.kvstore.nixl;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.cufile.CuFile;
import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.ffm.nixl.NixlAgent;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Answers whether a NIXL backend can be used here, for {@link NixlBackendSelection#resolve}: NIXL
 * itself (libnixl_capi), the backend's plugin as NIXL finds it ({@code libplugin_<NAME>.so} in
 * {@code NIXL_PLUGIN_DIR} or {@code plugins/} beside libnixl, or built in), and the library the
 * plugin drives (libcufile for GDS and GDS_MT).
 *
 * <p>A listed plugin whose shared object does not load (a dependency such as libucp missing) is
 * unavailable with the dynamic loader's reason, which NIXL itself reduces to "backend error".
 *
 * <p>The plugin list is NIXL's own answer, from a short-lived agent without threads, rather than a
 * guess from file names: it covers built-in plugins and plugin lists, and it proves the library
 * works. It is asked once per probe instance.
 */
public final class NixlBackendProbe implements Function<String, Availability> {

    /** Backends whose plugin needs libcufile (GPUDirect Storage). */
    private static final Set<String> NEEDS_CUFILE = Set.of("GDS", "GDS_MT");

    private final Supplier<Availability> nixl;
    private final Supplier<Availability> cufile;
    private final Supplier<List<String>> plugins;
    private final Supplier<String> pluginDir;
    private final Function<String, Optional<String>> pluginLoadError;
    private List<String> cachedPlugins;

    NixlBackendProbe(
            Supplier<Availability> nixl,
            Supplier<Availability> cufile,
            Supplier<List<String>> plugins,
            Supplier<String> pluginDir,
            Function<String, Optional<String>> pluginLoadError) {
        this.pluginLoadError = pluginLoadError;
        this.nixl = nixl;
        this.cufile = cufile;
        this.plugins = plugins;
        this.pluginDir = pluginDir;
    }

    /** A probe of this machine's libnixl_capi, its plugins and libcufile. */
    public static NixlBackendProbe ofThisMachine() {
        return new NixlBackendProbe(
                Nixl::availability,
                CuFile::availability,
                () -> {
                    try (NixlAgent agent =
                            Nixl.get().createAgent("kvstore-backend-probe", new NixlAgent.Config(false, 0))) {
                        return agent.availablePlugins();
                    }
                },
                () -> Nixl.get().pluginDirDescription(),
                name -> Nixl.get().pluginLoadError(name));
    }

    @Override
    public Availability apply(String backend) {
        return probe(backend);
    }

    /** The backend's availability: available with the plugin and library versions, or the first missing piece. */
    public synchronized Availability probe(String backend) {
        Availability library = nixl.get();
        if (!library.available()) {
            return Availability.unavailable("NIXL itself is unavailable: " + library.detail());
        }
        if (cachedPlugins == null) {
            cachedPlugins = List.copyOf(plugins.get());
        }
        if (!cachedPlugins.contains(backend)) {
            return Availability.unavailable(
                    "NIXL has no " + backend + " plugin (libplugin_" + backend + ".so); it found " + cachedPlugins
                            + " in " + pluginDir.get() + "; set NIXL_PLUGIN_DIR to the directory that holds it");
        }
        Optional<String> loadError = pluginLoadError.apply(backend);
        if (loadError.isPresent()) {
            return Availability.unavailable("NIXL plugin " + backend + " cannot be loaded: " + loadError.get());
        }
        if (NEEDS_CUFILE.contains(backend)) {
            Availability gds = cufile.get();
            if (!gds.available()) {
                return Availability.unavailable("NIXL plugin " + backend + " needs libcufile: " + gds.detail());
            }
            return Availability.available("plugin " + backend + " of " + library.detail() + "; " + gds.detail());
        }
        return Availability.available("plugin " + backend + " of " + library.detail());
    }
}
