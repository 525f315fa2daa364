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

    /**
     * Tomcat's own error page (HTML) becomes {@link ProblemErrorReportValve}: the host's error valves are
     * replaced just before the application starts, after every other customizer has run.
     */
    @Bean
    org.springframework.boot.tomcat.TomcatContextCustomizer problemJsonForContainerErrors() {
        return context -> {
            var host = (org.apache.catalina.Host) context.getParent();
            if (host instanceof org.apache.catalina.core.StandardHost standard) {
                standard.setErrorReportValveClass(ProblemErrorReportValve.class.getName());
            }
            context.addLifecycleListener(event -> {
                if (!org.apache.catalina.Lifecycle.BEFORE_START_EVENT.equals(event.getType())) {
                    return;
                }
                var pipeline = host.getPipeline();
                boolean ours = false;
                for (var valve : pipeline.getValves()) {
                    if (valve instanceof ProblemErrorReportValve) {
                        ours = true;
                    } else if (valve instanceof org.apache.catalina.valves.ErrorReportValve) {
                        pipeline.removeValve(valve);
                    }
                }
                if (!ours) {
                    pipeline.addValve(new ProblemErrorReportValve());
                }
            });
        };
    }

    @Bean
    TomcatConnectorCustomizer blockSizedSocketBuffers() {
        return connector -> {
            connector.setProperty("socket.appReadBufSize", Integer.toString(SOCKET_BUFFER));
            connector.setProperty("socket.appWriteBufSize", Integer.toString(SOCKET_BUFFER));
        };
    }
}
