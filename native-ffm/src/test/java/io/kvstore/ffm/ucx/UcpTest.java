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
        assertThat(UcpStatus.isRequest(MemorySegment.ofAddress(0x7f0000001000L))).isTrue();
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
}
