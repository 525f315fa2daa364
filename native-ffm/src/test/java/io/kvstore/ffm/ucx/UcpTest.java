package io.kvstore.ffm.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** libucp loads, reports its version, registers memory and turns bad input into named UCX errors. */
class UcpTest {

    private static void assumeUcx() {
        assumeTrue(Ucp.isAvailable(), () -> {
            System.out.println("SKIPPED UcpTest: " + Ucp.availability());
            return Ucp.availability().toString();
        });
    }

    @Test
    void availabilityNamesVersionAndLocation() {
        assumeUcx();
        assertThat(Ucp.availability().detail()).startsWith("UCX 1.").contains("libucp");
    }

    @Test
    void statusNamesComeFromTheLibrary() {
        assumeUcx();
        assertThat(Ucp.statusString(UcpStatus.ERR_CONNECTION_RESET)).containsIgnoringCase("connection reset");
        assertThat(UcpStatus.isError(MemorySegment.ofAddress(-25))).isTrue();
        assertThat(UcpStatus.isRequest(MemorySegment.ofAddress(0x7f0000001000L)))
                .isTrue();
        assertThat(UcpStatus.isRequest(MemorySegment.NULL)).isFalse();
    }

    @Test
    void registeredMemoryPacksAnRkeyAndWorkerHasAnAddress() {
        assumeUcx();
        try (UcpContext ctx = UcpContext.create(Ucp.FEATURE_RMA | Ucp.FEATURE_AM | Ucp.FEATURE_WAKEUP, Map.of());
                UcpWorker worker = UcpWorker.create(ctx);
                Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(1 << 20, 4096);
            try (UcpMemory mem = ctx.map(seg)) {
                assertThat(mem.packedRkey()).isNotEmpty();
            }
            assertThat(worker.address().length).isGreaterThan(16);
            worker.progress();
        }
    }

    @Test
    void invalidConfigurationValueIsANamedError() {
        assumeUcx();
        assertThatThrownBy(() -> UcpContext.create(Ucp.FEATURE_RMA, Map.of("RNDV_THRESH", "not-a-size")))
                .isInstanceOf(UcxException.class)
                .hasMessageContaining("ucp_config_modify(RNDV_THRESH=not-a-size)");
    }

    /**
     * Client-server wire-up: one worker listens on a loopback port the system chose, another connects by
     * socket address alone, the listener's handler accepts, and the client PUTs bytes into the server's
     * registered memory over that endpoint and flushes; the server sees them.
     */
    @Test
    void listenerAcceptsAClientBySocketAddressAndTheyExchangeData() throws Exception {
        assumeUcx();
        java.util.concurrent.atomic.AtomicReference<MemorySegment> request =
                new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger flushed =
                new java.util.concurrent.atomic.AtomicInteger(Integer.MIN_VALUE);
        Map<String, String> tcp = Map.of("TLS", "tcp");
        try (Arena callbacks = Arena.ofShared();
                UcpContext serverCtx = UcpContext.create(Ucp.FEATURE_RMA | Ucp.FEATURE_AM | Ucp.FEATURE_WAKEUP, tcp);
                UcpContext clientCtx = UcpContext.create(Ucp.FEATURE_RMA | Ucp.FEATURE_AM | Ucp.FEATURE_WAKEUP, tcp);
                UcpWorker server = UcpWorker.create(serverCtx);
                UcpWorker client = UcpWorker.create(clientCtx);
                Arena arena = Arena.ofConfined()) {
            MemorySegment onConnect = Ucp.connHandler((conn, arg) -> request.set(conn), callbacks);
            MemorySegment onFlush = Ucp.sendCallback(
                    (req, status, user) -> {
                        flushed.set(status);
                        Ucp.requestFree(req);
                    },
                    callbacks);
            MemorySegment target = arena.allocate(4096, 4096);
            try (UcpListener listener = server.listen(
                            new java.net.InetSocketAddress("127.0.0.1", 0), onConnect, MemorySegment.NULL);
                    UcpMemory memory = serverCtx.map(target)) {
                int port = listener.port();
                assertThat(port).isPositive();
                UcpEndpoint toServer = client.connect(
                        new java.net.InetSocketAddress("127.0.0.1", port),
                        Ucp.ERR_MODE_PEER,
                        MemorySegment.NULL,
                        MemorySegment.NULL);
                long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
                while (request.get() == null && System.nanoTime() < deadline) {
                    client.progress();
                    server.progress();
                }
                assertThat(request.get())
                        .as("the listener saw the client's connection request")
                        .isNotNull();
                UcpEndpoint toClient =
                        server.accept(request.get(), Ucp.ERR_MODE_PEER, MemorySegment.NULL, MemorySegment.NULL);

                MemorySegment message = arena.allocateFrom("written through a listener-made endpoint");
                UcpRemoteKey key = toServer.unpack(memory.packedRkey());
                MemorySegment put = toServer.put(message, target.address(), key, onFlush, 1);
                if (!UcpStatus.isRequest(put)) {
                    assertThat(UcpStatus.of(put)).isEqualTo(UcpStatus.OK);
                }
                flushed.set(Integer.MIN_VALUE);
                MemorySegment flush = toServer.flush(onFlush, 2);
                if (!UcpStatus.isRequest(flush)) {
                    flushed.set(UcpStatus.of(flush));
                }
                while (flushed.get() == Integer.MIN_VALUE && System.nanoTime() < deadline) {
                    client.progress();
                    server.progress();
                }
                assertThat(flushed.get()).as("flush status").isEqualTo(UcpStatus.OK);
                assertThat(target.getString(0)).isEqualTo("written through a listener-made endpoint");
                key.close();
                assertThat(toClient).isNotNull();
            }
        }
    }
}
