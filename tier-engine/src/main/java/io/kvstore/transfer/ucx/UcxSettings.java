package io.kvstore.transfer.ucx;

import java.time.Duration;
import java.util.Map;

/**
 * Settings of a {@link UcxTransferEngine}.
 *
 * @param ucxConfig UCX settings without the {@code UCX_} prefix applied to this engine's context on
 *     top of the environment, e.g. {@code TLS -> tcp} or {@code TLS -> sm}
 * @param path {@link UcxPath#AUTO} to choose per peer, or a fixed path (benchmarks, tests)
 * @param requestTimeout a request not finished by then fails, and the peer is disconnected
 * @param maxMessageBytes spans longer than this are sent as several messages, so one request
 *     cannot monopolise the worker and progress stays fine-grained
 */
public record UcxSettings(Map<String, String> ucxConfig, UcxPath path, Duration requestTimeout, long maxMessageBytes) {

    public UcxSettings {
        ucxConfig = Map.copyOf(ucxConfig);
        if (requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException("requestTimeout must be positive, got " + requestTimeout);
        }
        if (maxMessageBytes < 4096) {
            throw new IllegalArgumentException("maxMessageBytes must be at least 4096, got " + maxMessageBytes);
        }
    }

    /** Environment's UCX configuration, automatic path, 30 s time-out, 8 MiB messages. */
    public static UcxSettings defaults() {
        return new UcxSettings(Map.of(), UcxPath.AUTO, Duration.ofSeconds(30), 8L << 20);
    }

    public UcxSettings withTransports(String tls) {
        return new UcxSettings(Map.of("TLS", tls), path, requestTimeout, maxMessageBytes);
    }

    public UcxSettings withPath(UcxPath p) {
        return new UcxSettings(ucxConfig, p, requestTimeout, maxMessageBytes);
    }

    public UcxSettings withRequestTimeout(Duration t) {
        return new UcxSettings(ucxConfig, path, t, maxMessageBytes);
    }

    public UcxSettings withMaxMessageBytes(long m) {
        return new UcxSettings(ucxConfig, path, requestTimeout, m);
    }
}
