package io.kvstore.transfer.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import io.kvstore.transfer.Peer;
import io.kvstore.transfer.TransferOp;
import io.kvstore.transfer.TransferResult;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Two UCX transfer engines (a store and an engine-side client) move blocks one-sided. */
class UcxTransferEngineTest {

    private static final int BLOCK = 256 * 1024;

    @BeforeAll
    static void ucxPresent() {
        assumeTrue(Ucp.availability().available(), () -> "skipped: " + Ucp.availability());
    }

    @Test
    void writeThenReadBlocksWithAdjacentSpansCoalesced() throws Exception {
        try (Arena arena = Arena.ofShared();
                UcxTransferEngine store = new UcxTransferEngine(Duration.ofSeconds(10));
                UcxTransferEngine client = new UcxTransferEngine(Duration.ofSeconds(10))) {
            MemorySegment storeMemory = arena.allocate(64L * BLOCK, 4096);
            MemorySegment clientMemory = arena.allocate(64L * BLOCK, 4096);
            for (long i = 0; i < clientMemory.byteSize(); i += 8) {
                clientMemory.set(ValueLayout.JAVA_LONG, i, i ^ 0x5555_5555L);
            }
            try (LocalRegion storeRegion = store.register(storeMemory, MemoryKind.DRAM);
                    LocalRegion clientRegion = client.register(clientMemory, MemoryKind.DRAM);
                    Peer peer = client.connect("store", store.localAddress())) {
                // blocks 0..15 land in slots 16..31 (adjacent: one transfer), block 40 in slot 2
                List<TransferSpan> spans = new ArrayList<>();
                for (int b = 0; b < 16; b++) {
                    spans.add(new TransferSpan((long) b * BLOCK, (long) (16 + b) * BLOCK, BLOCK));
                }
                spans.add(new TransferSpan(40L * BLOCK, 2L * BLOCK, BLOCK));
                TransferResult written = client.post(TransferOp.WRITE, clientRegion, peer, storeRegion.describe(), spans)
                        .get(30, TimeUnit.SECONDS);
                assertThat(written.bytes()).isEqualTo(17L * BLOCK);
                assertThat(written.transfers()).isEqualTo(2);
                assertThat(storeMemory.asSlice(16L * BLOCK, 16L * BLOCK).mismatch(clientMemory.asSlice(0, 16L * BLOCK))).isEqualTo(-1);
                assertThat(storeMemory.asSlice(2L * BLOCK, BLOCK).mismatch(clientMemory.asSlice(40L * BLOCK, BLOCK))).isEqualTo(-1);

                MemorySegment before = arena.allocate(16L * BLOCK);
                MemorySegment.copy(clientMemory, 0, before, 0, 16L * BLOCK);
                clientMemory.asSlice(0, 16L * BLOCK).fill((byte) 0);
                TransferResult read = client.post(TransferOp.READ, clientRegion, peer, storeRegion.describe(),
                        spans.subList(0, 16)).get(30, TimeUnit.SECONDS);
                assertThat(read.transfers()).isEqualTo(1);
                assertThat(clientMemory.asSlice(0, 16L * BLOCK).mismatch(before)).isEqualTo(-1);

                assertThatThrownBy(() -> client.post(TransferOp.READ, clientRegion, peer, storeRegion.describe(),
                        List.of(new TransferSpan(0, 64L * BLOCK, BLOCK)))).hasMessageContaining("outside");
            }
        }
    }
}
