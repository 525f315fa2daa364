package io.kvstore.service.events;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.stereotype.Component;

/**
 * {@code /actuator/health} component {@code kvEvents}: whether KV events are published, where, on which
 * topic and how; down when enabled but the publisher thread has stopped.
 */
@Component("kvEvents")
public class EventsHealthIndicator implements HealthIndicator {

    private final EventsProperties config;
    private final ObjectProvider<KvEventPublisher> publisher;

    public EventsHealthIndicator(EventsProperties config, ObjectProvider<KvEventPublisher> publisher) {
        this.config = config;
        this.publisher = publisher;
    }

    @Override
    public Health health() {
        KvEventPublisher p = publisher.getIfAvailable();
        if (p == null) {
            return Health.up().withDetail("enabled", false).build();
        }
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("enabled", true);
        d.put("endpoint", p.endpoint());
        d.put("replayEndpoint", p.replayEndpoint());
        d.put("topic", config.topic());
        d.put("encoding", config.encoding().name().toLowerCase(java.util.Locale.ROOT));
        d.put("replaySize", config.replaySize());
        d.put("queueSize", config.queueSize());
        d.put(
                "medium",
                Map.of(
                        "HBM",
                        config.medium().hbm(),
                        "DRAM",
                        config.medium().dram(),
                        "NVME",
                        config.medium().nvme()));
        d.put("lastSeq", p.lastSeq());
        return (p.running() ? Health.up() : Health.down()).withDetails(d).build();
    }
}
