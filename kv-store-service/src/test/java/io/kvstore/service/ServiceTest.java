package io.kvstore.service;

import org.junit.jupiter.api.BeforeEach;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * One real server (random port, small tiers, 10 s leases) shared by the API test classes with the same properties;
 * each server gets a data directory of its own from {@link FreshDataDirs}. Leases (and reservations that name no
 * timeout) last 10 s: long enough that a test checking a lease still holds is not beaten by a stall of a loaded
 * machine, short enough that the tests waiting for one to expire wait 10 s, with a deadline of 60 s.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.admin-token=secret",
            "kvstore.lease-timeout=10s",
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
