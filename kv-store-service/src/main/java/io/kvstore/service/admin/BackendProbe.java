package io.kvstore.service.admin;

import io.kvstore.ffm.Availability;
import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.nixl.NixlBackendSelection;
import io.kvstore.service.config.KvStoreProperties;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data-plane backends this process can use: the {@code DYN_KVBM_NIXL_BACKEND_*} choice resolved once
 * at start-up (a bad value stops the service), each backend's library probed. UCX is probed through the
 * libucp binding; backends without a binding in this build are reported unavailable with that reason.
 */
public final class BackendProbe {

    private static final Logger log = LoggerFactory.getLogger(BackendProbe.class);

    private final NixlBackendSelection.Resolved resolved;

    public BackendProbe(KvStoreProperties properties, Map<String, String> environment) {
        this.resolved = NixlBackendSelection.resolve(environment, properties.nixl().backends(),
                properties.nixl().requireBackends(), BackendProbe::availability);
        log.info(resolved.summary());
    }

    public NixlBackendSelection.Resolved resolved() {
        return resolved;
    }

    /** A backend's library, as far as this build can tell. */
    public static Availability availability(String backend) {
        return switch (backend) {
            case "UCX" -> Ucp.availability();
            case "POSIX" -> Availability.available("libc (POSIX reads and writes)");
            default -> Availability.unavailable("no binding for NIXL backend " + backend + " in this build");
        };
    }
}
