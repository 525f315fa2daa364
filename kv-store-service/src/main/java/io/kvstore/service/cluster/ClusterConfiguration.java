package io.kvstore.service.cluster;

import io.etcd.jetcd.Client;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.admin.AdminController;
import io.kvstore.service.blocks.BlockService;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.ProblemAdvice;
import io.kvstore.service.metrics.EngineMetrics;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.security.EngineCallers;
import io.kvstore.service.security.PeerCredentials;
import io.kvstore.service.security.TenantGuard;
import io.kvstore.service.security.TokenStore;
import io.kvstore.service.transport.TransportService;
import java.time.Clock;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.json.JsonMapper;

/**
 * Cluster mode's parts, built only when {@code kvstore.cluster.enabled} is true. The node registers in
 * etcd once the application is ready (its HTTP port is open), so peers never route to a node that cannot
 * answer yet; it cannot reach etcd then, start-up fails with the reason.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBooleanProperty("kvstore.cluster.enabled")
@EnableConfigurationProperties(ClusterProperties.class)
public class ClusterConfiguration {

    @Bean(destroyMethod = "close")
    Client etcdClient(ClusterProperties properties) {
        return EtcdClients.connect(properties.endpoints());
    }

    /** This node as it registers: with the run its peers sign calls for, when it takes signed calls. */
    @Bean
    Member selfMember(ClusterProperties properties, PeerCredentials credentials) {
        String address = properties.advertisedAddress().replaceAll("/+$", "");
        return new Member(
                properties.nodeName(),
                address,
                System.currentTimeMillis(),
                credentials.configured() ? credentials.boot() : null);
    }

    @Bean(destroyMethod = "close")
    Membership membership(Client etcd, ClusterProperties properties, Member self, JsonMapper json) {
        return new Membership(etcd, properties, self, json, Clock.systemUTC());
    }

    @Bean
    ClusterPins clusterPins(TierEngine engine) {
        return new ClusterPins(engine);
    }

    @Bean(destroyMethod = "close")
    ClusterSettings clusterSettings(
            Client etcd,
            ClusterProperties properties,
            JsonMapper json,
            NamespaceRegistry namespaces,
            AdminController admin,
            BlockService blocks,
            ClusterPins pins) {
        return new ClusterSettings(etcd, properties, json, namespaces, admin, blocks, pins);
    }

    @Bean
    Peers peers(
            Member self,
            TierEngine engine,
            BlockService blocks,
            NamespaceRegistry namespaces,
            TransportService transport,
            AdminController admin,
            JsonMapper json,
            ClusterProperties properties,
            KvStoreProperties kvstore,
            PeerCredentials credentials) {
        if (!credentials.configured()) {
            LoggerFactory.getLogger(ClusterConfiguration.class)
                    .warn("cluster: kvstore.cluster.secret is unset, so peers cannot vouch for callers: calls between "
                            + "nodes carry kvstore.cluster.peer-token and kvstore.admin-token, whose rules apply "
                            + "instead of the caller's; set the same secret on every node");
        }
        return new Peers(
                new LocalPeer(self, engine, blocks, namespaces, transport, admin),
                json,
                properties.peerTimeout(),
                properties.peerToken(),
                kvstore.adminToken(),
                credentials);
    }

    /** The probe other nodes send ({@link ProbeServlet}), served beside Spring MVC's dispatcher. */
    @Bean
    ServletRegistrationBean<ProbeServlet> probeServlet(
            TokenStore tokens,
            PeerCredentials credentials,
            TenantGuard guard,
            NamespaceRegistry namespaces,
            Peers peers,
            ProblemAdvice problems,
            JsonMapper json,
            KvStoreProperties kvstore) {
        ProbeServlet servlet = new ProbeServlet(
                new EngineCallers(tokens, credentials),
                guard,
                namespaces,
                peers,
                problems,
                json,
                kvstore.limits().maxBlocksPerRequest());
        ServletRegistrationBean<ProbeServlet> registration =
                new ServletRegistrationBean<>(servlet, ProbeServlet.MAPPING);
        registration.setName("kvstoreClusterProbe");
        registration.setLoadOnStartup(1);
        return registration;
    }

    @Bean(destroyMethod = "close")
    ExecutorService clusterCalls() {
        return Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("kvstore-cluster-", 0).factory());
    }

    @Bean
    ClusterRouter clusterRouter(
            Membership membership,
            Peers peers,
            ClusterProperties properties,
            ExecutorService clusterCalls,
            KvStoreProperties kvstore,
            EngineMetrics metrics) {
        return new ClusterRouter(
                membership,
                peers,
                properties,
                clusterCalls,
                kvstore.maxRequestSize().toBytes(),
                metrics);
    }

    @Bean
    ApplicationListener<ApplicationReadyEvent> joinCluster(Membership membership, ClusterSettings settings) {
        return event -> {
            // the first etcd calls of a process (connection set-up) can be slow on a loaded machine: a minute
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try {
                    settings.start(membership);
                    break;
                } catch (Exception e) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("kvstore.cluster: cannot read settings from etcd: " + e, e);
                    }
                    org.slf4j.LoggerFactory.getLogger(ClusterConfiguration.class)
                            .warn("cluster: etcd not reachable yet ({}); retrying", e.toString());
                }
            }
            try {
                membership.start();
            } catch (Exception e) {
                throw new IllegalStateException("kvstore.cluster: cannot join through etcd: " + e, e);
            }
        };
    }
}
