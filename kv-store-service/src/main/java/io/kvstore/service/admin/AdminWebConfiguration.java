package io.kvstore.service.admin;

import io.kvstore.service.config.KvStoreProperties;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/** Puts the admin token check in front of every {@code /admin} mapping. */
@Configuration(proxyBeanMethods = false)
public class AdminWebConfiguration implements WebMvcConfigurer {

    private final KvStoreProperties properties;

    public AdminWebConfiguration(KvStoreProperties properties) {
        this.properties = properties;
    }

    @Override
    public void addInterceptors(InterceptorRegistry registry) {
        registry.addInterceptor(new AdminTokenInterceptor(properties.adminToken()))
                .addPathPatterns("/admin", "/admin/**");
    }
}
