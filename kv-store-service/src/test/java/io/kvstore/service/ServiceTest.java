package io.kvstore.service;

import org.junit.jupiter.api.BeforeEach;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * One real server (random port, small tiers, 2 s leases) shared by the API test classes with the same properties;
 * each server gets a data directory of its own from {@link FreshDataDirs}.
 */
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

    @LocalServerPort
    int port;

    Http http;

    @BeforeEach
    void client() {
        http = new Http(port);
    }
}
