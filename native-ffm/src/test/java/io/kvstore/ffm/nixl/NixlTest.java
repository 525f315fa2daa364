package io.kvstore.ffm.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.NativeHandle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class NixlTest {

    private static final long BYTES = 64L << 20;

    @BeforeEach
    void printAvailability() {
        System.out.println("NIXL: " + Nixl.availability());
    }

    @Test
    void unavailableLibraryNamesEveryPlaceItLooked() {
        var availability = Nixl.availability();
        assertThat(availability.detail()).isNotBlank();
        if (availability.available()) {
            assertThat(availability.detail()).startsWith("libnixl_capi at ").contains("plugins from");
            return;
        }
        if (availability.detail().contains("not found")) {
            for (Path dir : Nixl.searchDirs()) {
                assertThat(availability.detail())
                        .contains(dir.resolve("libnixl_capi.so").toString());
            }
            assertThat(availability.detail())
                    .contains("/usr/local/nixl/lib/")
                    .contains("/opt/nvidia/nvda_nixl/")
                    .contains("libnixl_capi.so (system loader paths)")
                    .contains("NIXL_LIB_DIR");
        } else {
            assertThat(availability.detail())
                    .contains("libnixl_capi")
                    .containsAnyOf("lacks symbol", "could not be loaded", "stub build");
        }
        assertThatThrownBy(Nixl::get)
                .isInstanceOf(LibraryUnavailableException.class)
                .hasMessage(availability.detail());
    }

    @Test
    void agentConfigLayoutMatchesWrapperHeader() {
        assertThat(Nixl.AGENT_CONFIG.byteSize()).isEqualTo(40);
        assertThat(Nixl.AGENT_CONFIG.byteOffset(PathElement.groupElement("listen_port")))
                .isEqualTo(4);
        assertThat(Nixl.AGENT_CONFIG.byteOffset(PathElement.groupElement("thread_sync")))
                .isEqualTo(8);
        assertThat(Nixl.AGENT_CONFIG.byteOffset(PathElement.groupElement("pthr_delay_us")))
                .isEqualTo(16);
        assertThat(Nixl.AGENT_CONFIG.byteOffset(PathElement.groupElement("capture_telemetry")))
                .isEqualTo(32);
        assertThat(NixlException.statusName(-6)).isEqualTo("NIXL_CAPI_ERROR_NOT_FOUND");
        assertThat(new NixlException("nixl_capi_post_xfer_req(x)", -2))
                .hasMessage("nixl_capi_post_xfer_req(x) failed: NIXL_CAPI_ERROR_BACKEND (-2)");
    }

    private static long crc(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        crc.update(segment.asByteBuffer());
        return crc.getValue();
    }

    private static void fill(MemorySegment segment, long seed) {
        long x = seed;
        for (long i = 0; i < segment.byteSize(); i += 8) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, i, x);
        }
    }

    private static void await(NixlTransfer transfer) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        boolean done = transfer.post();
        while (!done) {
            assertThat(System.nanoTime())
                    .as("transfer finished within 60 s: " + transfer)
                    .isLessThan(deadline);
            Thread.onSpinWait();
            done = transfer.isDone();
        }
    }

    @Test
    void twoAgentsWriteAndRead64MiBOverUcx() throws Exception {
        NixlRequirement.assumeUcx();
        Nixl nixl = Nixl.get();
        try (Arena arena = Arena.ofShared();
                NixlAgent initiator = nixl.createAgent("kvstore-initiator", NixlAgent.Config.DEFAULT);
                NixlAgent target = nixl.createAgent("kvstore-target", NixlAgent.Config.DEFAULT)) {
            NixlAgent.PluginParams params = initiator.pluginParams("UCX");
            System.out.println("UCX plugin: " + params);
            assertThat(params.memoryTypes()).contains("DRAM");
            MemorySegment source = arena.allocate(BYTES, 4096);
            MemorySegment back = arena.allocate(BYTES, 4096);
            MemorySegment remote = arena.allocate(BYTES, 4096);
            fill(source, 11);
            NixlDescriptor src = new NixlDescriptor(source.address(), BYTES, 0);
            NixlDescriptor dst = new NixlDescriptor(back.address(), BYTES, 0);
            NixlDescriptor rem = new NixlDescriptor(remote.address(), BYTES, 0);
            try (NixlBackend ib = initiator.createBackend("UCX", Map.of());
                    NixlBackend tb = target.createBackend("UCX", Map.of());
                    NixlRegistration r1 = initiator.register(Nixl.DRAM_SEG, List.of(src, dst), ib);
                    NixlRegistration r2 = target.register(Nixl.DRAM_SEG, List.of(rem), tb)) {
                String targetName = initiator.loadRemoteMetadata(target.localMetadata());
                assertThat(targetName).isEqualTo("kvstore-target");
                assertThat(target.loadRemoteMetadata(initiator.localMetadata())).isEqualTo("kvstore-initiator");

                byte[] note = "blocks 0..4095 written".getBytes(StandardCharsets.UTF_8);
                try (NixlTransfer write = initiator.createTransfer(
                        Nixl.XFER_WRITE,
                        Nixl.DRAM_SEG,
                        List.of(src),
                        Nixl.DRAM_SEG,
                        List.of(rem),
                        targetName,
                        ib,
                        note)) {
                    await(write);
                }
                assertThat(crc(remote)).isEqualTo(crc(source));

                try (NixlTransfer read = initiator.createTransfer(
                        Nixl.XFER_READ,
                        Nixl.DRAM_SEG,
                        List.of(dst),
                        Nixl.DRAM_SEG,
                        List.of(rem),
                        targetName,
                        null,
                        null)) {
                    await(read);
                }
                assertThat(crc(back)).isEqualTo(crc(source));

                long deadline = System.nanoTime() + 10_000_000_000L;
                Map<String, List<byte[]>> notes = target.takeNotifications();
                while (notes.isEmpty() && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                    notes = target.takeNotifications();
                }
                assertThat(notes).containsKey("kvstore-initiator");
                assertThat(notes.get("kvstore-initiator"))
                        .anySatisfy(m -> assertThat(m).isEqualTo(note));
                initiator.invalidateRemoteMetadata(targetName);
            }
        }
    }

    @Test
    void transferToAnUnknownAgentNamesTheStatus() {
        NixlRequirement.assumeUcx();
        try (Arena arena = Arena.ofConfined();
                NixlAgent agent = Nixl.get().createAgent("kvstore-lonely", NixlAgent.Config.DEFAULT);
                NixlBackend ucx = agent.createBackend("UCX", Map.of())) {
            MemorySegment buffer = arena.allocate(4096, 4096);
            NixlDescriptor d = new NixlDescriptor(buffer.address(), 4096, 0);
            try (NixlRegistration r = agent.register(Nixl.DRAM_SEG, List.of(d), ucx)) {
                assertThatThrownBy(() -> agent.createTransfer(
                                Nixl.XFER_READ,
                                Nixl.DRAM_SEG,
                                List.of(d),
                                Nixl.DRAM_SEG,
                                List.of(d),
                                "nobody",
                                ucx,
                                null))
                        .isInstanceOf(NixlException.class)
                        .hasMessageContaining("nixl_capi_create_xfer_req")
                        .hasMessageContaining("NIXL_CAPI_ERROR");
            }
        }
    }

    @Test
    void handlesCloseOnceAndRefuseUseAfterClose() {
        NixlRequirement.assumeUcx();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(1 << 20, 4096);
            NixlAgent agent = Nixl.get().createAgent("kvstore-close-once", new NixlAgent.Config(false, 0));
            NixlBackend backend = agent.createBackend("UCX", Map.of());
            NixlRegistration registration = agent.register(
                    Nixl.DRAM_SEG, List.of(new NixlDescriptor(memory.address(), memory.byteSize(), 0)), backend);
            registration.close();
            registration.close(); // a second deregistration would hand NIXL a freed list
            assertThat(registration.isClosed()).isTrue();
            backend.close();
            backend.close();
            assertThatThrownBy(() -> agent.register(
                            Nixl.DRAM_SEG, List.of(new NixlDescriptor(memory.address(), 4096, 0)), backend))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("NIXL backend UCX of kvstore-close-once is closed");
            agent.close();
            agent.close();
            assertThatThrownBy(agent::localMetadata)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("NIXL agent closed: kvstore-close-once");
        }
    }

    /**
     * NIXL cannot stop a transfer in flight (releasing it only forgets it while the bytes keep moving), so
     * closing a request that has not reported done or failed is refused; once it has, close releases it.
     */
    @Test
    void requestInFlightRefusesToCloseUntilItReportedDone() throws Exception {
        NixlRequirement.assumeUcx();
        Nixl nixl = Nixl.get();
        long bytes = 128L << 20;
        try (Arena arena = Arena.ofShared();
                NixlAgent initiator = nixl.createAgent("kvstore-hasty", NixlAgent.Config.DEFAULT);
                NixlAgent target = nixl.createAgent("kvstore-hasty-target", NixlAgent.Config.DEFAULT)) {
            MemorySegment local = arena.allocate(bytes, 4096);
            MemorySegment remote = arena.allocate(bytes, 4096);
            NixlDescriptor dst = new NixlDescriptor(local.address(), bytes, 0);
            NixlDescriptor src = new NixlDescriptor(remote.address(), bytes, 0);
            try (NixlBackend ib = initiator.createBackend("UCX", Map.of());
                    NixlBackend tb = target.createBackend("UCX", Map.of());
                    NixlRegistration r1 = initiator.register(Nixl.DRAM_SEG, List.of(dst), ib);
                    NixlRegistration r2 = target.register(Nixl.DRAM_SEG, List.of(src), tb)) {
                String targetName = initiator.loadRemoteMetadata(target.localMetadata());
                NixlTransfer read = initiator.createTransfer(
                        Nixl.XFER_READ, Nixl.DRAM_SEG, List.of(dst), Nixl.DRAM_SEG, List.of(src), targetName, ib, null);
                boolean done = read.post();
                Assumptions.assumeFalse(done, "the 128 MiB read completed within its post: nothing in flight");
                assertThatThrownBy(read::close)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("is in flight");
                assertThat(read.isClosed()).isFalse();
                while (!read.isDone()) {
                    Thread.onSpinWait();
                }
                read.close();
                assertThat(read.isClosed()).isTrue();
                initiator.invalidateRemoteMetadata(targetName);
            }
        }
    }

    /**
     * An agent closed with requests (one finished, one never posted) and a registration still open releases them
     * first: NIXL holds nothing of them once close returned, and their own closes afterwards do nothing. (Not with a
     * request in flight: UCX 1.13 aborts the process when the agent's worker is destroyed under one, released or
     * not.)
     */
    @Test
    void closingTheAgentReleasesTheRequestsAndRegistrationsStillOpen() throws Exception {
        NixlRequirement.assumeUcx();
        Nixl nixl = Nixl.get();
        long bytes = 64L << 20;
        try (Arena arena = Arena.ofShared();
                NixlAgent target = nixl.createAgent("kvstore-orphans-target", NixlAgent.Config.DEFAULT)) {
            MemorySegment local = arena.allocate(bytes, 4096);
            MemorySegment remote = arena.allocate(bytes, 4096);
            NixlDescriptor dst = new NixlDescriptor(local.address(), bytes, 0);
            NixlDescriptor src = new NixlDescriptor(remote.address(), bytes, 0);
            NixlAgent agent = nixl.createAgent("kvstore-orphans", NixlAgent.Config.DEFAULT);
            NixlBackend backend = agent.createBackend("UCX", Map.of());
            try (NixlBackend tb = target.createBackend("UCX", Map.of());
                    NixlRegistration r2 = target.register(Nixl.DRAM_SEG, List.of(src), tb)) {
                NixlRegistration registration = agent.register(Nixl.DRAM_SEG, List.of(dst), backend);
                String targetName = agent.loadRemoteMetadata(target.localMetadata());
                NixlTransfer finished = agent.createTransfer(
                        Nixl.XFER_READ,
                        Nixl.DRAM_SEG,
                        List.of(dst),
                        Nixl.DRAM_SEG,
                        List.of(src),
                        targetName,
                        null,
                        null);
                await(finished);
                NixlTransfer idle = agent.createTransfer(
                        Nixl.XFER_WRITE,
                        Nixl.DRAM_SEG,
                        List.of(dst),
                        Nixl.DRAM_SEG,
                        List.of(src),
                        targetName,
                        null,
                        null);
                assertThat(agent.liveNativeObjects())
                        .as("two requests and a registration")
                        .isEqualTo(3);

                backend.close(); // as owners do: backends first, the agent last
                agent.close();

                assertThat(agent.liveNativeObjects())
                        .as("request handles and registrations NIXL still holds after the agent closed")
                        .isZero();
                List<NativeHandle> children = List.of(finished, idle, registration);
                assertThat(children).allMatch(NativeHandle::isClosed);
                children.forEach(NativeHandle::close); // nothing left to do, nothing to refuse
            }
        }
    }
}
