package io.kvstore.transfer.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import io.kvstore.transfer.RemoteRegion;
import io.kvstore.transfer.TransferException;
import io.kvstore.transfer.TransferOp;
import io.kvstore.transfer.TransferResult;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Two engines in one process, each with its own UCX context and worker, over shared memory and tcp. */
class UcxTransferEngineTest {

    private static final long BLOCK = 1 << 20;
    private static final int BLOCKS = 32;

    private final Arena arena = Arena.ofShared();
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @BeforeAll
    static void ucxPresent() {
        assumeTrue(Ucp.isAvailable(), () -> {
            System.out.println("SKIPPED UcxTransferEngineTest: libucp " + Ucp.availability());
            return "libucp " + Ucp.availability();
        });
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        arena.close();
    }

    private UcxTransferEngine engine(String tls) {
        UcxTransferEngine e = UcxTransferEngine.create(
                UcxSettings.defaults().withTransports(tls).withRequestTimeout(Duration.ofSeconds(20)));
        closeables.add(e);
        return e;
    }

    private LocalRegion region(UcxTransferEngine engine, long seed) {
        MemorySegment seg = arena.allocate(BLOCK * BLOCKS, 4096);
        Patterns.fillRegion(seg, BLOCK, seed);
        LocalRegion r = engine.register(seg, MemoryKind.DRAM);
        closeables.add(r);
        return r;
    }

    /** Local block i <-> remote block (n-1-i): no two spans are adjacent, so nothing coalesces. */
    private static List<TransferSpan> reversed() {
        List<TransferSpan> spans = new ArrayList<>();
        for (int i = 0; i < BLOCKS; i++) {
            spans.add(new TransferSpan(i * BLOCK, (BLOCKS - 1 - i) * BLOCK, BLOCK));
        }
        return spans;
    }

    private void readAndWriteBothWays(String tls, UcxPath expectedPath) throws Exception {
        UcxTransferEngine a = engine(tls);
        UcxTransferEngine b = engine(tls);
        LocalRegion mine = region(a, 1);
        LocalRegion theirs = region(b, 2);
        UcxPeer peer = a.connect("b", b.localAddress());
        assertThat(peer.path()).as(peer.endpointInfo()).isEqualTo(expectedPath);
        MemorySegment scratch = arena.allocate(BLOCK);

        TransferResult read = a.post(TransferOp.READ, mine, peer, theirs.describe(), reversed())
                .get(60, TimeUnit.SECONDS);
        assertThat(read.bytes()).isEqualTo(BLOCK * BLOCKS);
        assertThat(read.transfers()).isEqualTo(BLOCKS);
        assertThat(Patterns.crc(mine.segment()))
                .isEqualTo(Patterns.expectedCrc(BLOCKS, BLOCK, 2, i -> BLOCKS - 1 - i, scratch));

        Patterns.fillRegion(mine.segment(), BLOCK, 3);
        a.post(TransferOp.WRITE, mine, peer, theirs.describe(), reversed()).get(60, TimeUnit.SECONDS);
        assertThat(Patterns.crc(theirs.segment()))
                .isEqualTo(Patterns.expectedCrc(BLOCKS, BLOCK, 3, i -> BLOCKS - 1 - i, scratch));
    }

    @Test
    void sharedMemoryMovesBlocksOneSidedBothWays() throws Exception {
        readAndWriteBothWays("sm", UcxPath.RMA);
    }

    @Test
    void tcpMovesBlocksWithActiveMessagesBothWays() throws Exception {
        readAndWriteBothWays("tcp", UcxPath.ACTIVE_MESSAGES);
    }

    @Test
    void adjacentBlocksCoalesceIntoOneTransfer() throws Exception {
        UcxTransferEngine a = engine("sm");
        UcxTransferEngine b = engine("sm");
        LocalRegion mine = region(a, 1);
        LocalRegion theirs = region(b, 2);
        UcxPeer peer = a.connect("b", b.localAddress());
        List<TransferSpan> spans = new ArrayList<>();
        for (int i = 0; i < BLOCKS; i++) {
            spans.add(new TransferSpan(i * BLOCK, i * BLOCK, BLOCK));
        }
        TransferResult r =
                a.post(TransferOp.READ, mine, peer, theirs.describe(), spans).get(60, TimeUnit.SECONDS);
        assertThat(r.transfers()).isEqualTo(1);
        assertThat(mine.segment().mismatch(theirs.segment())).isEqualTo(-1);
    }

    @Test
    void corruptedRemoteKeyIsRejectedBeforeUcxSeesIt() {
        UcxTransferEngine a = engine("sm");
        UcxTransferEngine b = engine("sm");
        LocalRegion mine = region(a, 1);
        LocalRegion theirs = region(b, 2);
        UcxPeer peer = a.connect("b", b.localAddress());
        byte[] key = theirs.remoteKey();
        key[key.length / 2] ^= 0x5A;
        RemoteRegion forged =
                new RemoteRegion(theirs.segment().address(), theirs.segment().byteSize(), key);
        assertThatThrownBy(() -> a.post(TransferOp.READ, mine, peer, forged, List.of(new TransferSpan(0, 0, BLOCK))))
                .isInstanceOf(TransferException.class)
                .hasMessageContaining("CRC32C");
        RemoteRegion garbage = new RemoteRegion(theirs.segment().address(), BLOCK, new byte[] {1, 2, 3});
        assertThatThrownBy(() -> a.post(TransferOp.READ, mine, peer, garbage, List.of(new TransferSpan(0, 0, BLOCK))))
                .isInstanceOf(TransferException.class)
                .hasMessageContaining("too short");
    }

    @Test
    void addressThatIsNotTheKeysRegionIsRejected() {
        UcxTransferEngine a = engine("sm");
        UcxTransferEngine b = engine("sm");
        LocalRegion mine = region(a, 1);
        LocalRegion theirs = region(b, 2);
        UcxPeer peer = a.connect("b", b.localAddress());
        RemoteRegion moved = new RemoteRegion(
                theirs.segment().address() + (1L << 40), theirs.segment().byteSize(), theirs.remoteKey());
        assertThatThrownBy(() -> a.post(TransferOp.WRITE, mine, peer, moved, List.of(new TransferSpan(0, 0, BLOCK))))
                .isInstanceOf(TransferException.class)
                .hasMessageContaining("does not match its key");
        assertThatThrownBy(() -> a.post(
                        TransferOp.WRITE,
                        mine,
                        peer,
                        theirs.describe(),
                        List.of(new TransferSpan(0, BLOCK * BLOCKS - 8, 16))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("outside");
    }

    @Test
    void peerRefusesWritesOutsideItsRegisteredMemory() {
        UcxTransferEngine a = engine("tcp");
        UcxTransferEngine b = engine("tcp");
        LocalRegion mine = region(a, 1);
        LocalRegion theirs = region(b, 2);
        UcxPeer peer = a.connect("b", b.localAddress());
        // A key that passes the local checks but claims memory the peer never registered.
        RegionKey real = RegionKey.decode(theirs.remoteKey());
        long elsewhere = theirs.segment().address() + (1L << 40);
        RemoteRegion forged =
                new RemoteRegion(elsewhere, BLOCK, new RegionKey(elsewhere, BLOCK, real.packedRkey()).encode());
        var future = a.post(TransferOp.WRITE, mine, peer, forged, List.of(new TransferSpan(0, 0, BLOCK)));
        assertThatThrownBy(() -> future.get(20, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(TransferException.class)
                .hasMessageContaining("refused by the peer");
        var read = a.post(TransferOp.READ, mine, peer, forged, List.of(new TransferSpan(0, 0, BLOCK)));
        assertThatThrownBy(() -> read.get(20, TimeUnit.SECONDS)).cause().isInstanceOf(TransferException.class);
        assertThat(Patterns.crc(theirs.segment())).isEqualTo(Patterns.crc(theirs.segment()));
    }

    @Test
    void requestToClosedPeerFails() {
        UcxTransferEngine a = engine("tcp");
        UcxTransferEngine b = engine("tcp");
        LocalRegion mine = region(a, 1);
        LocalRegion theirs = region(b, 2);
        UcxPeer peer = a.connect("b", b.localAddress());
        peer.close();
        var future = a.post(TransferOp.READ, mine, peer, theirs.describe(), List.of(new TransferSpan(0, 0, BLOCK)));
        assertThatThrownBy(() -> future.get(30, TimeUnit.SECONDS))
                .cause()
                .isInstanceOf(TransferException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void onlyHostMemoryCanBeRegistered() {
        UcxTransferEngine a = engine("sm");
        assertThatThrownBy(() -> a.register(arena.allocate(4096), MemoryKind.VRAM))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("VRAM");
    }

    /**
     * A caller that closes its region while a request into it is still in flight (another thread's, or one
     * that failed part-way) must not make UCX copy into unmapped memory: the close waits for the operations
     * on that region, and the process lives on to make the next transfer.
     */
    @Test
    void closingARegionWithATransferInFlightWaitsInsteadOfCrashing() throws Exception {
        // over tcp the READ is active messages answered by the peer: truly in flight when the close comes
        UcxTransferEngine a = engine("tcp");
        UcxTransferEngine b = engine("tcp");
        LocalRegion theirs = b.allocate(256L << 20);
        closeables.add(theirs);
        UcxPeer peer = a.connect("b", b.localAddress());
        LocalRegion doomed = a.allocate(256L << 20);
        List<TransferSpan> spans = new ArrayList<>();
        for (long i = 0; i < 128; i++) {
            spans.add(new TransferSpan(i * (2 << 20), (127 - i) * (2 << 20), 2 << 20));
        }
        var inFlight = a.post(TransferOp.READ, doomed, peer, theirs.describe(), spans);
        doomed.close();
        assertThat(inFlight).succeedsWithin(Duration.ofSeconds(30));

        LocalRegion next = region(a, 5);
        assertThat(a.post(TransferOp.READ, next, peer, theirs.describe(), reversed())
                        .get(60, TimeUnit.SECONDS)
                        .bytes())
                .isEqualTo(BLOCK * BLOCKS);
    }

    /**
     * The serving side: a region a peer is READing over active messages is closed while the replies
     * carrying its bytes are still being sent. The close waits for them (or cuts the peer off) before
     * UCX frees the memory, instead of UCX sending from freed memory; the reader gets its bytes or a
     * clean failure, and both engines go on working.
     */
    @Test
    void closingARegionAPeerIsReadingWaitsForTheRepliesInsteadOfCrashing() throws Exception {
        UcxTransferEngine a = engine("tcp");
        UcxTransferEngine b = engine("tcp");
        LocalRegion served = b.allocate(256L << 20);
        UcxPeer peer = a.connect("b", b.localAddress());
        LocalRegion mine = a.allocate(256L << 20);
        closeables.add(mine);
        List<TransferSpan> spans = new ArrayList<>();
        for (long i = 0; i < 128; i++) {
            spans.add(new TransferSpan(i * (2 << 20), (127 - i) * (2 << 20), 2 << 20));
        }
        var inFlight = a.post(TransferOp.READ, mine, peer, served.describe(), spans);
        Thread.sleep(50); // the first READ messages reach b and their replies start going out
        served.close();
        // the READ ends either way (its bytes, or a failure naming the closed peer), and the process lives on
        inFlight.handle((result, failure) -> null).get(30, TimeUnit.SECONDS);
        // both engines still work
        LocalRegion theirs = region(b, 7);
        LocalRegion next = region(a, 8);
        assertThat(a.post(TransferOp.READ, next, peer, theirs.describe(), reversed())
                        .get(60, TimeUnit.SECONDS)
                        .bytes())
                .isEqualTo(BLOCK * BLOCKS);
    }

    @Test
    void aTransferPostedOnAClosedRegionFailsClearly() throws Exception {
        UcxTransferEngine a = engine("sm");
        UcxTransferEngine b = engine("sm");
        LocalRegion theirs = region(b, 2);
        UcxPeer peer = a.connect("b", b.localAddress());
        LocalRegion closed = a.allocate(BLOCK * BLOCKS);
        closed.close();
        assertThat(a.post(TransferOp.READ, closed, peer, theirs.describe(), reversed()))
                .failsWithin(Duration.ofSeconds(10))
                .withThrowableThat()
                .withMessageContaining("was closed");
    }
}
