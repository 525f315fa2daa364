package io.kvstore.service.security;

import io.kvstore.service.config.KvStoreProperties;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;
import tools.jackson.databind.json.JsonMapper;

/** Puts the token check in front of the engine API and says at start-up which mode it runs in. */
@Configuration(proxyBeanMethods = false)
public class SecurityWebConfiguration implements WebMvcConfigurer {

    private final TokenStore tokens;

    public SecurityWebConfiguration(TokenStore tokens) {
        this.tokens = tokens;
    }

    @Bean
    static TokenStore tokenStore(KvStoreProperties properties, JsonMapper json) {
        TokenStore store = new TokenStore(properties, json);
        var log = LoggerFactory.getLogger(SecurityWebConfiguration.class);
        if (store.empty()) {
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
        return store;
    }

    @Override
    public void addInterceptors(InterceptorRegistry registry) {
        registry.addInterceptor(new ApiAuthInterceptor(tokens)).addPathPatterns("/v1", "/v1/**");
    }
}
