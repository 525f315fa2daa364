package io.kvstore.service.web;

import org.springframework.boot.tomcat.TomcatConnectorCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Socket buffers sized for block traffic. Tomcat's defaults (8 KiB application buffers) suit small JSON;
 * a 2 MiB block then takes hundreds of small reads or writes per request. Larger buffers let one call
 * move a large part of a block.
 */
@Configuration(proxyBeanMethods = false)
public class HttpTuning {

    static final int SOCKET_BUFFER = 256 * 1024;

    @Bean
    TomcatConnectorCustomizer blockSizedSocketBuffers() {
        return connector -> {
            connector.setProperty("socket.appReadBufSize", Integer.toString(SOCKET_BUFFER));
            connector.setProperty("socket.appWriteBufSize", Integer.toString(SOCKET_BUFFER));
        };
    }
}
