package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.service.transport.BackendProbe;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * At shutdown the DRAM tier's memory, registered with the one-sided transport (here a NIXL agent, as
 * DRAM_SEG), is deregistered before the engine frees it: a peer's one-sided access after that fails at the
 * transport instead of reaching memory the process has given back. Before, the engine closed first (it needs
 * the transport, so Spring destroyed it earlier) and the registration outlived the memory until the transport
 * closed. Skips without NIXL unless {@code KVSTORE_REQUIRE_NIXL=1}.
 */
@ExtendWith(OutputCaptureExtension.class)
class TransportShutdownOrderTest {

    @TempDir
    Path dir;

    @Test
    void theTiersRegistrationIsReleasedBeforeTheEngineFreesItsMemory(CapturedOutput log) {
        var ucx = BackendProbe.nixlAvailability("UCX");
        NixlRequirement.assumeNixl(ucx.available(), () -> "skipped: NIXL's UCX backend " + ucx);
        String[] args = {
            "--server.port=0",
            "--kvstore.data-dir=" + dir.resolve("data"),
            "--kvstore.transport.data-plane=nixl",
            "--kvstore.tiers.nvme.enabled=false",
            "--kvstore.tiers.dram.capacity=8MB",
            "--kvstore.tiers.dram.slab-size=4MB"
        };
        new SpringApplicationBuilder(KvStoreApplication.class).run(args).close();

        String out = log.getOut() + log.getErr();
        assertThat(out).contains("with the 8 MiB DRAM tier registered as DRAM_SEG");
        int released = out.indexOf("one-sided transport: the DRAM tier's registration released");
        int freed = out.indexOf("tier engine closed");
        assertThat(released).as("the registration is released").isNotNegative();
        assertThat(freed).as("the engine closes").isNotNegative();
        assertThat(released).as("before the engine frees the tiers").isLessThan(freed);
    }
}
