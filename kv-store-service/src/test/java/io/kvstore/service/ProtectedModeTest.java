package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Collections;
import org.junit.jupiter.api.Test;

/**
 * Without any API token the service runs in protected mode, as Redis does: the engine API answers
 * loopback clients and refuses everyone else with 403 saying how to open it (here: a request to the
 * machine's own non-loopback address, which arrives from that address).
 */
class ProtectedModeTest extends ServiceTest {

    @Test
    void withoutTokensOnlyLoopbackClientsReachTheEngineApi() throws Exception {
        assertThat(http.get("/v1/namespaces").statusCode()).isEqualTo(200);
        InetAddress external = null;
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (nic.isUp() && !nic.isLoopback()) {
                for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                    if (a instanceof Inet4Address) {
                        external = a;
                    }
                }
            }
        }
        assumeTrue(external != null, "no non-loopback IPv4 address on this machine");
        var r = Http.CLIENT.send(
                HttpRequest.newBuilder(
                                URI.create("http://" + external.getHostAddress() + ":" + port + "/v1/namespaces"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(403);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(r.body()).contains("protected mode", "kvstore.tokens");
        // operational endpoints stay reachable
        var health = Http.CLIENT.send(
                HttpRequest.newBuilder(
                                URI.create("http://" + external.getHostAddress() + ":" + port + "/actuator/health"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).isEqualTo(200);
    }
}
