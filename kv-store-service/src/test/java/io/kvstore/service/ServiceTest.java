package io.kvstore.service;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** One real server (random port, small tiers, 2 s leases) shared by the API test classes with the same properties. */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.admin-token=secret",
            "kvstore.lease-timeout=2s",
            "kvstore.max-request-size=1MB",
            "kvstore.tiers.dram.capacity=2MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.capacity=4MB",
            "kvstore.tiers.nvme.file-size=1MB",
            "kvstore.tiers.nvme.slab-size=256KB",
            "kvstore.tiers.nvme.io-threads=2"
        })
abstract class ServiceTest {

    static final String[] ADMIN = {"Authorization", "Bearer secret"};

    /**
     * A data directory per server: Spring calls this once for each context it starts, and subclasses
     * with their own properties (the one-sided tests forcing a data plane) get a server of their own,
     * which cannot share the first one's NVMe index.
     */
    @DynamicPropertySource
    static void dataDir(DynamicPropertyRegistry registry) throws java.io.IOException {
        Path dir = Files.createTempDirectory("kvstore-service-test");
        registry.add("kvstore.data-dir", dir::toString);
    }

    @LocalServerPort
    int port;

    Http http;

    @BeforeEach
    void client() {
        http = new Http(port);
    }
}
