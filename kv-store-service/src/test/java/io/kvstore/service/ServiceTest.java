package io.kvstore.service;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** One real server (random port, small tiers, 2 s leases) shared by the API test classes. */
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

    static final Path DATA_DIR;

    static {
        try {
            DATA_DIR = Files.createTempDirectory("kvstore-service-test");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static final String[] ADMIN = {"Authorization", "Bearer secret"};

    @DynamicPropertySource
    static void dataDir(DynamicPropertyRegistry registry) {
        registry.add("kvstore.data-dir", DATA_DIR::toString);
    }

    @LocalServerPort
    int port;

    Http http;

    @BeforeEach
    void client() {
        http = new Http(port);
    }
}
