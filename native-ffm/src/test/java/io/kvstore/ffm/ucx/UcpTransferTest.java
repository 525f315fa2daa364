package io.kvstore.ffm.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Two UCX contexts and workers in one process move data one-sided over the transports UCX picks here. */
class UcpTransferTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @BeforeAll
    static void ucxPresent() {
        System.out.println("UCX: " + Ucp.availability());
        assumeTrue(Ucp.availability().available(), () -> "skipped: " + Ucp.availability());
    }

    private static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    @Test
    void putAndGetMoveBytesBothWaysExactly() {
        long size = 64L << 20;
        try (Arena arena = Arena.ofShared();
                UcpContext serverContext = new UcpContext(Ucp.FEATURE_RMA);
                UcpContext clientContext = new UcpContext(Ucp.FEATURE_RMA);
                UcpWorker server = serverContext.newWorker();
                UcpWorker client = clientContext.newWorker()) {
            server.startProgressThread("ucx-test-server");
            MemorySegment serverRegion = arena.allocate(size, 4096);
            MemorySegment clientBuffer = arena.allocate(size, 4096);
            for (long i = 0; i < size; i += 8) {
                clientBuffer.set(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
            }
            try (UcpMemory registered = serverContext.map(serverRegion);
                    UcpMemory clientRegistered = clientContext.map(clientBuffer);
                    UcpEndpoint endpoint = client.connect(server.address());
                    RemoteKey key = endpoint.unpack(registered.packedKey())) {
                // WRITE: 64 MiB in 1 MiB blocks into the server's memory
                for (long off = 0; off < size; off += 1 << 20) {
                    endpoint.put(clientBuffer.asSlice(off, 1 << 20), serverRegion.address() + off, key, TIMEOUT);
                }
                endpoint.flush(TIMEOUT);
                assertThat(crc(serverRegion)).isEqualTo(crc(clientBuffer));
                // READ: back into a cleared buffer
                clientBuffer.fill((byte) 0);
                for (long off = 0; off < size; off += 1 << 20) {
                    endpoint.get(clientBuffer.asSlice(off, 1 << 20), serverRegion.address() + off, key, TIMEOUT);
                }
                assertThat(clientBuffer.mismatch(serverRegion)).isEqualTo(-1);
            }
        }
    }

    @Test
    void garbageRemoteKeyIsAnErrorNotACrash() {
        try (UcpContext serverContext = new UcpContext(Ucp.FEATURE_RMA);
                UcpContext clientContext = new UcpContext(Ucp.FEATURE_RMA);
                UcpWorker server = serverContext.newWorker();
                UcpWorker client = clientContext.newWorker()) {
            server.startProgressThread("ucx-test-server");
            try (Arena arena = Arena.ofConfined();
                    UcpMemory registered = serverContext.map(arena.allocate(1 << 20, 4096));
                    UcpEndpoint endpoint = client.connect(server.address())) {
                byte[] garbage = new byte[64];
                java.util.Arrays.fill(garbage, (byte) 0x5A);
                assertThatThrownBy(() -> endpoint.unpack(garbage)).isInstanceOf(UcxException.class)
                        .hasMessageContaining("not a kvstore remote key");
                byte[] corrupted = registered.packedKey();
                corrupted[corrupted.length - 3] ^= 0x10;
                assertThatThrownBy(() -> endpoint.unpack(corrupted)).hasMessageContaining("fails its checksum");
                byte[] truncated = java.util.Arrays.copyOf(registered.packedKey(), 20);
                assertThatThrownBy(() -> endpoint.unpack(truncated)).hasMessageContaining("carries");
                endpoint.unpack(registered.packedKey()).close();
            }
        }
    }

    @Test
    void availabilityNamesTheVersion() {
        assertThat(Ucp.availability().detail()).contains("UCX 1.");
        assertThat(Ucp.statusName(-6)).isNotBlank();
    }
}
