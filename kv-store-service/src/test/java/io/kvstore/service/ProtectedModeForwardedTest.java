package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Collections;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Protected mode on Kubernetes (which Spring Boot detects from {@code KUBERNETES_SERVICE_HOST}, simulated here
 * with {@code spring.main.cloud-platform}): Spring Boot then turns on Tomcat's RemoteIpValve, which takes the
 * client address from {@code X-Forwarded-For} whenever the connection comes from a private address. A client on
 * the pod network that sends {@code X-Forwarded-For: 127.0.0.1} then counts as loopback and gets the whole engine
 * API. Here: a request to the machine's own private (RFC 1918 / ULA) address, which arrives from that address.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.main.cloud-platform=kubernetes",
            "kvstore.tiers.dram.capacity=2MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.enabled=false",
            "kvstore.transport.enabled=false"
        })
class ProtectedModeForwardedTest {

    @LocalServerPort
    int port;

    @Test
    void aForwardedForHeaderDoesNotMakeARemoteClientLoopback() throws Exception {
        String host = null;
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (nic.isUp() && !nic.isLoopback()) {
                for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                    if (a instanceof Inet4Address && a.isSiteLocalAddress()) {
                        host = a.getHostAddress();
                    } else if (a instanceof Inet6Address && (a.getAddress()[0] & 0xFE) == 0xFC && host == null) {
                        host = "[" + a.getHostAddress().replaceAll("%.*", "") + "]";
                    }
                }
            }
        }
        assumeTrue(host != null, "no private (10/8, 172.16/12, 192.168/16 or fc00::/7) address on this machine");
        URI uri = URI.create("http://" + host + ":" + port + "/v1/namespaces");
        var plain = Http.CLIENT.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(plain.statusCode()).as(plain.body()).isEqualTo(403);
        var forged = Http.CLIENT.send(
                HttpRequest.newBuilder(uri)
                        .header("X-Forwarded-For", "127.0.0.1")
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(forged.statusCode()).as(forged.body()).isEqualTo(403);
    }
}
