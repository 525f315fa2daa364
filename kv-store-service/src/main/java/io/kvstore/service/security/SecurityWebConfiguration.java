package io.kvstore.service.security;

import io.kvstore.service.config.KvStoreProperties;
import java.time.Clock;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;
import tools.jackson.databind.json.JsonMapper;

/**
 * Puts the token checks in front of the engine API ({@code /v1}) and the admin API ({@code /admin}, admin
 * role) and says at start-up which mode it runs in.
 */
@Configuration(proxyBeanMethods = false)
public class SecurityWebConfiguration implements WebMvcConfigurer {

    private final TokenStore tokens;
    private final PeerCredentials peers;

    public SecurityWebConfiguration(TokenStore tokens, PeerCredentials peers) {
        this.tokens = tokens;
        this.peers = peers;
    }

    @Bean
    static TokenStore tokenStore(KvStoreProperties properties, JsonMapper json) {
        TokenStore store = new TokenStore(properties, json);
        var log = LoggerFactory.getLogger(SecurityWebConfiguration.class);
        if (store.protectedMode()) {
            log.info("protected mode: no API tokens configured, the engine API answers loopback clients only "
                    + "(set kvstore.tokens, or issue one with POST /admin/tokens, to serve the network)");
        } else {
            log.info(
                    "engine API: {} bearer token(s) for tenant(s) {}",
                    store.all().size(),
                    store.all().stream()
                            .map(ApiToken::tenant)
                            .distinct()
                            .sorted()
                            .toList());
        }
        if (!store.anyAdmin()) {
            log.info("admin API: no token has the admin role, every /admin call is refused "
                    + "(set kvstore.tokens[n].admin=true or kvstore.admin-token)");
        }
        return store;
    }

    @Bean
    static PeerCredentials peerCredentials(
            @Value("${kvstore.cluster.secret:}") String secret,
            @Value("${kvstore.cluster.node-name:}") String node,
            @Value("${kvstore.cluster.peer-senders:" + PeerCredentials.DEFAULT_SENDERS + "}") int senders,
            JsonMapper json) {
        if (senders < 1) {
            throw new IllegalArgumentException("kvstore.cluster.peer-senders must be at least 1, got " + senders);
        }
        return new PeerCredentials(secret, node, json, Clock.systemUTC(), senders);
    }

    /** Checks a forwarded call's body against its signed digest before any handler reads it. */
    @Bean
    static PeerBodyFilter peerBodyFilter(PeerCredentials credentials, JsonMapper json) {
        return new PeerBodyFilter(credentials, json);
    }

    @Override
    public void addInterceptors(InterceptorRegistry registry) {
        registry.addInterceptor(new ApiAuthInterceptor(new EngineCallers(tokens, peers)))
                .addPathPatterns("/v1", "/v1/**");
        registry.addInterceptor(new AdminAuthInterceptor(tokens, peers)).addPathPatterns("/admin", "/admin/**");
    }
}
