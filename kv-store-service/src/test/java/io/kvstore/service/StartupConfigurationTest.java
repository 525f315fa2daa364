package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * A bad {@code kvstore.*} value stops start-up with one message naming the property, under "APPLICATION
 * FAILED TO START", never "Application run failed" and a wall of bean-creation stack trace.
 */
@ExtendWith(OutputCaptureExtension.class)
class StartupConfigurationTest {

    @TempDir
    Path dir;

    private void failsToStart(CapturedOutput log, String message, String... properties) {
        String[] args = new String[properties.length + 3];
        args[0] = "--server.port=0";
        args[1] = "--kvstore.data-dir=" + dir.resolve("data");
        args[2] = "--kvstore.transport.enabled=false";
        System.arraycopy(properties, 0, args, 3, properties.length);
        assertThatThrownBy(() -> new SpringApplicationBuilder(KvStoreApplication.class).run(args))
                .isInstanceOf(RuntimeException.class);
        assertThat(log.getOut() + log.getErr())
                .contains("APPLICATION FAILED TO START", message)
                .doesNotContain("Application run failed")
                .doesNotContainPattern("\\n\\s+at io\\.kvstore\\.");
    }

    @Test
    void anNvmeCapacityThatIsNotAMultipleOfTheFileSizeIsOneLineNotAStackTrace(CapturedOutput log) {
        failsToStart(
                log,
                "kvstore.tiers.nvme.capacity must be a multiple of the file size",
                "--kvstore.tiers.nvme.capacity=20MB",
                "--kvstore.tiers.nvme.file-size=8MB",
                "--kvstore.tiers.nvme.slab-size=4MB",
                "--kvstore.tiers.dram.capacity=8MB",
                "--kvstore.tiers.dram.slab-size=4MB");
    }

    /** A data directory the NVMe tier cannot use (here a regular file stands where it should be). */
    @Test
    void aDataDirThatCannotBeUsedIsOneLineNamingThePropertyNotAStackTrace(CapturedOutput log) throws Exception {
        java.nio.file.Files.writeString(dir.resolve("data"), "a file, not a directory");
        failsToStart(
                log,
                "kvstore.data-dir: cannot use " + dir.resolve("data"),
                "--kvstore.tiers.nvme.capacity=8MB",
                "--kvstore.tiers.nvme.file-size=8MB",
                "--kvstore.tiers.nvme.slab-size=4MB",
                "--kvstore.tiers.dram.capacity=8MB",
                "--kvstore.tiers.dram.slab-size=4MB");
    }

    /**
     * Without the NVMe tier the data directory still keeps namespace declarations and issued tokens: a service
     * that cannot use it must not start and then refuse every declaration with 507.
     */
    @Test
    void aDataDirThatCannotBeUsedStopsStartUpWithoutTheNvmeTierToo(CapturedOutput log) throws Exception {
        java.nio.file.Files.writeString(dir.resolve("data"), "a file, not a directory");
        failsToStart(
                log,
                "kvstore.data-dir: cannot use " + dir.resolve("data"),
                "--kvstore.tiers.nvme.enabled=false",
                "--kvstore.tiers.dram.capacity=8MB",
                "--kvstore.tiers.dram.slab-size=4MB");
    }

    @Test
    void aBadNixlBackendFlagIsOneLineNotAStackTrace(CapturedOutput log) {
        failsToStart(
                log,
                "kvstore.nixl.backends.UCX='maybe' is not allowed",
                "--kvstore.nixl.backends.UCX=maybe",
                "--kvstore.tiers.nvme.enabled=false",
                "--kvstore.tiers.dram.capacity=8MB",
                "--kvstore.tiers.dram.slab-size=4MB");
    }

    @Test
    void anUnknownMemoryProviderIsOneLineNotAStackTrace(CapturedOutput log) {
        failsToStart(
                log,
                "provider must be one of host, emulated-device, cuda-pinned, cuda-device",
                "--kvstore.tiers.dram.provider=gpu",
                "--kvstore.tiers.nvme.enabled=false",
                "--kvstore.tiers.dram.capacity=8MB",
                "--kvstore.tiers.dram.slab-size=4MB");
    }

    /**
     * An HBM tier on {@code cuda-device} where CUDA cannot be used (no libcudart, driver or GPU, as here)
     * stops start-up with one line naming the setting and why, not a bean-creation stack trace.
     */
    @Test
    void aCudaDeviceTierWithoutCudaIsOneLineNamingTheSettingNotAStackTrace(CapturedOutput log) {
        org.junit.jupiter.api.Assumptions.assumeFalse(
                io.kvstore.ffm.cuda.CudaRuntime.availability().available(), "CUDA is usable here");
        failsToStart(
                log,
                "kvstore.tiers.hbm.provider=cuda-device",
                "--kvstore.tiers.hbm.provider=cuda-device",
                "--kvstore.tiers.hbm.capacity=8MB",
                "--kvstore.tiers.hbm.slab-size=4MB",
                "--kvstore.tiers.nvme.enabled=false",
                "--kvstore.tiers.dram.capacity=8MB",
                "--kvstore.tiers.dram.slab-size=4MB");
    }

    /** The same for a DRAM tier on {@code cuda-pinned} without CUDA. */
    @Test
    void aCudaPinnedDramTierWithoutCudaIsOneLineNamingTheSettingNotAStackTrace(CapturedOutput log) {
        org.junit.jupiter.api.Assumptions.assumeFalse(
                io.kvstore.ffm.cuda.CudaRuntime.availability().available(), "CUDA is usable here");
        failsToStart(
                log,
                "kvstore.tiers.dram.provider=cuda-pinned",
                "--kvstore.tiers.dram.provider=cuda-pinned",
                "--kvstore.tiers.nvme.enabled=false",
                "--kvstore.tiers.dram.capacity=8MB",
                "--kvstore.tiers.dram.slab-size=4MB");
    }

    /**
     * A DRAM tier on {@code cuda-device} (GPU memory the CPU cannot touch) is refused for what it is, with or
     * without a GPU here, in one line naming the setting and the providers that fit.
     */
    @Test
    void aDramTierOnDeviceMemoryIsOneLineNamingTheProvidersThatFit(CapturedOutput log) {
        failsToStart(
                log,
                "kvstore.tiers.dram.provider=cuda-device gives memory only CUDA can copy",
                "--kvstore.tiers.dram.provider=cuda-device",
                "--kvstore.tiers.nvme.enabled=false",
                "--kvstore.tiers.dram.capacity=8MB",
                "--kvstore.tiers.dram.slab-size=4MB");
    }

    /**
     * {@code kvstore.transport.data-plane=ucx} forces the plane: when it cannot start (here UCX has no
     * transport by the name {@code ucx-tls} gives), start-up fails naming why, as configs/README.md says,
     * instead of the service coming up with the one-sided path off.
     */
    @Test
    void aForcedDataPlaneThatFailsToStartStopsStartUp(CapturedOutput log) {
        org.junit.jupiter.api.Assumptions.assumeTrue(
                io.kvstore.ffm.ucx.Ucp.isAvailable(), () -> "libucp " + io.kvstore.ffm.ucx.Ucp.availability());
        String[] args = {
            "--server.port=0",
            "--kvstore.data-dir=" + dir.resolve("data"),
            "--kvstore.transport.data-plane=ucx",
            "--kvstore.transport.ucx-tls=no-such-transport",
            "--kvstore.tiers.nvme.enabled=false",
            "--kvstore.tiers.dram.capacity=8MB",
            "--kvstore.tiers.dram.slab-size=4MB"
        };
        Throwable failure = null;
        try {
            new SpringApplicationBuilder(KvStoreApplication.class).run(args).close();
        } catch (RuntimeException e) {
            failure = e;
        }
        assertThat(failure)
                .as("the service started with the forced data plane down")
                .isNotNull();
        assertThat(log.getOut() + log.getErr())
                .contains("APPLICATION FAILED TO START", "kvstore.transport.data-plane=ucx", "UCX failed to start");
    }
}
