package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The HBM tier's path to NVMe as operators see it, in health and {@code GET /admin/backends}: with an
 * emulated device tier (host memory, labelled) it is through host memory, never GPUDirect Storage, and says
 * why. The GPUDirect Storage route itself runs in tier-engine's {@code DeviceStoragePathTest} (CPU, with a
 * labelled stand-in) and on a GPU in {@code CuFileDeviceFileCopierTest}.
 */
@TestPropertySource(
        properties = {
            "kvstore.tiers.hbm.provider=emulated-device",
            "kvstore.tiers.hbm.capacity=1MB",
            "kvstore.tiers.hbm.slab-size=256KB"
        })
class DeviceStorageServiceTest extends ServiceTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private static void assertThroughHost(JsonNode device) {
        assertThat(device.path("hbm").asString()).isEqualTo("emulated-device (emulated, not a GPU)");
        assertThat(device.path("storage").asString()).isEqualTo("THROUGH_HOST");
        assertThat(device.path("reason").asString()).contains("emulated device memory has no DMA path");
        assertThat(device.path("route").asString())
                .isEqualTo("HBM demotes to DRAM and DRAM to NVMe, through host memory");
        assertThat(device.path("vramRegistered").asBoolean(true)).isFalse();
        assertThat(device.path("vramReason").asString()).contains("emulated");
    }

    @Test
    void backendsShowThatAnEmulatedDeviceTierReachesNvmeThroughHostMemory() throws Exception {
        var r = http.get("/admin/backends", ADMIN);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThroughHost(JSON.readTree(r.body()).path("deviceStorage"));
    }

    @Test
    void healthShowsTheSameDevicePath() throws Exception {
        var r = http.get("/actuator/health");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThroughHost(JSON.readTree(r.body())
                .path("components")
                .path("kvstore")
                .path("details")
                .path("deviceStorage"));
    }
}
