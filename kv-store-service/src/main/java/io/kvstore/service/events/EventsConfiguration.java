package io.kvstore.service.events;

import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetAddress;
import java.net.UnknownHostException;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Starts the KV event publisher when {@code kvstore.events.enabled} is true; the engine configuration
 * passes it the engine's copy events.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(EventsProperties.class)
public class EventsConfiguration {

    @Bean(destroyMethod = "close")
    @ConditionalOnBooleanProperty("kvstore.events.enabled")
    KvEventPublisher kvEventPublisher(EventsProperties config, NamespaceRegistry namespaces, MeterRegistry registry) {
        return new KvEventPublisher(config, hostName(), ns -> declared(namespaces, ns), registry);
    }

    private static NamespaceTopics.Declared declared(NamespaceRegistry namespaces, String namespace) {
        try {
            NamespaceSpec spec = namespaces.require(namespace);
            return new NamespaceTopics.Declared(spec.model(), spec.blockSize(), spec.lora(), spec.extraKeys());
        } catch (NotFoundException e) {
            return null;
        }
    }

    /** {@code HOSTNAME} (a pod's name in Kubernetes), else the local host name. */
    static String hostName() {
        String env = System.getenv("HOSTNAME");
        if (env != null && !env.isBlank()) {
            return env;
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            return "kvstore";
        }
    }
}
