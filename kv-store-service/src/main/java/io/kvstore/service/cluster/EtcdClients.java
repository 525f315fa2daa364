package io.kvstore.service.cluster;

import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.List;

/** Builds the etcd client every cluster part shares. */
final class EtcdClients {

    private EtcdClients() {}

    /**
     * A client for {@code endpoints}. gRPC keep-alive pings without calls stay off: etcd 3.4 (Debian's)
     * answers pings on an idle connection with GOAWAY "too_many_pings", after which jetcd's watches stop
     * without an error (jetcd issue 1075); the membership's renewals keep the connection busy instead.
     */
    static Client connect(List<String> endpoints) {
        return Client.builder()
                .endpoints(endpoints.toArray(String[]::new))
                .keepaliveWithoutCalls(false)
                .connectTimeout(Duration.ofSeconds(5))
                .retryMaxDuration(Duration.ofSeconds(10))
                .build();
    }
}
