package io.kvstore.service.transport;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.nixl.NixlBackendProbe;
import io.kvstore.nixl.NixlBackendSelection;
import io.kvstore.service.config.KvStoreProperties;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data-plane backends this process can use: the {@code DYN_KVBM_NIXL_BACKEND_*} choice resolved once
 * at start-up (a bad value stops the service), each backend probed through NIXL (libnixl_capi, its plugin,
 * libcufile for GDS). Where NIXL is absent, UCX falls back to the direct libucp data plane and POSIX to libc;
 * any other backend is reported unavailable with NIXL's reason.
 */
public final class BackendProbe {

    private static final Logger log = LoggerFactory.getLogger(BackendProbe.class);

    private final NixlBackendSelection.Resolved resolved;

    public BackendProbe(KvStoreProperties properties, Map<String, String> environment) {
        this.resolved = NixlBackendSelection.resolve(
                environment,
                properties.nixl().backends(),
                properties.nixl().requireBackends(),
                BackendProbe::availability);
        log.info(resolved.summary());
    }

    public NixlBackendSelection.Resolved resolved() {
        return resolved;
    }

    private static final NixlBackendProbe NIXL = NixlBackendProbe.ofThisMachine();

    /** A backend's availability through NIXL alone (libnixl_capi and the backend's plugin), no fallback. */
    public static Availability nixlAvailability(String backend) {
        return NIXL.probe(backend);
    }

    /** A backend's availability: through NIXL when it has the backend, else the direct fallback if one exists. */
    public static Availability availability(String backend) {
        Availability viaNixl = NIXL.probe(backend);
        if (viaNixl.available()) {
            return viaNixl;
        }
        return switch (backend) {
            case "UCX" -> {
                Availability ucp = Ucp.availability();
                yield ucp.available()
                        ? Availability.available(
                                "direct libucp " + ucp.detail() + " (NIXL not used: " + viaNixl.detail() + ")")
                        : Availability.unavailable(viaNixl.detail() + "; direct libucp: " + ucp.detail());
            }
            case "POSIX" ->
                Availability.available("libc POSIX reads and writes (NIXL not used: " + viaNixl.detail() + ")");
            default -> viaNixl;
        };
    }
}
