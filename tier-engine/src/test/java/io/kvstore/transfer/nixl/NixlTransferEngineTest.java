package io.kvstore.transfer.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.nixl.NixlBackendProbe;
import io.kvstore.nixl.NixlBackendSelection;
import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import io.kvstore.transfer.Peer;
import io.kvstore.transfer.RemoteRegion;
import io.kvstore.transfer.TransferOp;
import io.kvstore.transfer.TransferResult;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class NixlTransferEngineTest {

    private static final long BLOCK = 64 * 1024;
    private static final int BLOCKS = 256; // 16 MiB per region

    private static Set<String> ucxBackends() {
        System.out.println("NIXL: " + Nixl.availability());
        NixlRequirement.assumeNixl(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        var resolved = NixlBackendSelection.resolve(
                Map.of("DYN_KVBM_NIXL_BACKEND_UCX", "true"), Map.of(), false, NixlBackendProbe.ofThisMachine());
        System.out.println(resolved.summary());
        NixlRequirement.assumeNixl(resolved.enabled().contains("UCX"), () -> "skipped: " + resolved.summary());
        return resolved.enabled();
    }

    private static long crc(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        crc.update(segment.asByteBuffer());
        return crc.getValue();
    }

    @Test
    void engineWithoutNixlRefusesToStartAndSaysWhy() {
        assumeTrue(!Nixl.availability().available(), "NIXL is present here; the refusal cannot be observed");
        assertThatThrownBy(() -> new NixlTransferEngine("kvstore-test", Set.of("UCX"), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("NIXL transfer engine unavailable: "
                        + Nixl.availability().detail());
    }

    @ParameterizedTest
    @EnumSource(MemoryKind.class)
    void memoryKindsMapToNixlSegmentTypes(MemoryKind kind) {
        assertThat(NixlTransferEngine.segmentType(kind)).isEqualTo(kind.ordinal());
    }

    @Test
    void writesThenReadsScatteredBlocksBetweenTwoAgents() throws Exception {
        Set<String> backends = ucxBackends();
        try (Arena arena = Arena.ofShared();
                NixlTransferEngine kvstore = new NixlTransferEngine("kvstore-store", backends, Duration.ofSeconds(30));
                NixlTransferEngine engine =
                        new NixlTransferEngine("kvstore-engine", backends, Duration.ofSeconds(30))) {
            assertThat(engine.backend()).isEqualTo("NIXL/UCX");
            MemorySegment pool = arena.allocate(BLOCK * BLOCKS, 4096);
            MemorySegment source = arena.allocate(BLOCK * BLOCKS, 4096);
            MemorySegment back = arena.allocate(BLOCK * BLOCKS, 4096);
            Patterns.fill(source, 3);
            try (LocalRegion poolRegion = kvstore.register(pool, MemoryKind.DRAM);
                    LocalRegion sourceRegion = engine.register(source, MemoryKind.DRAM);
                    LocalRegion backRegion = engine.register(back, MemoryKind.DRAM)) {
                RemoteRegion remote = poolRegion.describe();
                try (Peer store = engine.connect("kvstore", kvstore.localAddress())) {
                    // blocks go to reversed slots in pairs: 2 adjacent blocks coalesce into one transfer
                    List<TransferSpan> spans = new ArrayList<>();
                    for (int b = 0; b < BLOCKS; b++) {
                        int slot = (BLOCKS - 2 - (b & ~1)) + (b & 1);
                        spans.add(new TransferSpan(b * BLOCK, slot * BLOCK, BLOCK));
                    }
                    TransferResult written = engine.post(TransferOp.WRITE, sourceRegion, store, remote, spans)
                            .get(60, TimeUnit.SECONDS);
                    assertThat(written.bytes()).isEqualTo(BLOCK * BLOCKS);
                    assertThat(written.transfers()).isEqualTo(BLOCKS / 2);
                    for (int b = 0; b < BLOCKS; b++) {
                        int slot = (BLOCKS - 2 - (b & ~1)) + (b & 1);
                        assertThat(crc(pool.asSlice(slot * BLOCK, BLOCK)))
                                .isEqualTo(crc(source.asSlice(b * BLOCK, BLOCK)));
                    }
                    TransferResult read = engine.post(TransferOp.READ, backRegion, store, remote, spans)
                            .get(60, TimeUnit.SECONDS);
                    assertThat(read.bytes()).isEqualTo(BLOCK * BLOCKS);
                    assertThat(crc(back)).isEqualTo(crc(source));
                    System.out.printf(
                            "NIXL/UCX: wrote %d MiB in %s, read in %s%n",
                            (BLOCK * BLOCKS) >> 20, written.elapsed(), read.elapsed());
                }
            }
        }
    }

    @Test
    void spanOutsideTheRemoteRegionIsRefusedBeforeAnyTransfer() throws Exception {
        Set<String> backends = ucxBackends();
        try (Arena arena = Arena.ofShared();
                NixlTransferEngine a = new NixlTransferEngine("kvstore-a", backends, Duration.ofSeconds(5));
                NixlTransferEngine b = new NixlTransferEngine("kvstore-b", backends, Duration.ofSeconds(5))) {
            MemorySegment mine = arena.allocate(8192, 4096);
            MemorySegment theirs = arena.allocate(4096, 4096);
            try (LocalRegion local = a.register(mine, MemoryKind.DRAM);
                    LocalRegion remote = b.register(theirs, MemoryKind.DRAM);
                    Peer peer = a.connect("b", b.localAddress())) {
                assertThatThrownBy(() -> a.post(
                                TransferOp.READ, local, peer, remote.describe(), List.of(new TransferSpan(0, 0, 8192))))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("lies outside");
            }
        }
    }

    /**
     * NIXL's UCX backend cannot stop a transfer in flight (releasing the request only forgets it), so a
     * timed-out transfer must not hand the local region back before NIXL has let go of it: once the
     * future has completed, with its timeout error, the destination never changes again.
     */
    @Test
    void timedOutReadNeverWritesTheDestinationAfterItsFutureCompleted() throws Exception {
        Set<String> backends = ucxBackends();
        long bytes = 128L << 20;
        try (Arena arena = Arena.ofShared();
                NixlTransferEngine store =
                        new NixlTransferEngine("kvstore-slow-store", backends, Duration.ofSeconds(30));
                NixlTransferEngine engine =
                        new NixlTransferEngine("kvstore-impatient", backends, Duration.ofNanos(1))) {
            MemorySegment pool = arena.allocate(bytes, 4096);
            MemorySegment destination = arena.allocate(bytes, 4096);
            Patterns.fill(pool, 11);
            try (LocalRegion poolRegion = store.register(pool, MemoryKind.DRAM);
                    LocalRegion destinationRegion = engine.register(destination, MemoryKind.DRAM);
                    Peer peer = engine.connect("store", store.localAddress())) {
                var read = engine.post(
                        TransferOp.READ,
                        destinationRegion,
                        peer,
                        poolRegion.describe(),
                        List.of(new TransferSpan(0, 0, bytes)));
                assertThatThrownBy(() -> read.get(60, TimeUnit.SECONDS))
                        .hasRootCauseInstanceOf(io.kvstore.transfer.TransferException.class)
                        .hasMessageContaining("timed out after");
                long atReturn = crc(destination);
                List<Long> later = new ArrayList<>();
                for (int i = 0; i < 10; i++) {
                    Thread.sleep(100);
                    later.add(crc(destination));
                }
                assertThat(later)
                        .as("CRC32C of the destination in the second after the timed-out read returned")
                        .containsOnly(atReturn);
            }
        }
    }

    /**
     * A read in flight when its engine closes finishes, whole, before the agent goes: it is not abandoned (UCX may
     * abort the process when an agent is destroyed under a request in flight).
     */
    @Test
    void aReadInFlightAtCloseFinishesBeforeTheAgentGoes() throws Exception {
        Set<String> backends = ucxBackends();
        long bytes = 256L << 20;
        try (Arena arena = Arena.ofShared();
                NixlTransferEngine store =
                        new NixlTransferEngine("kvstore-draining-store", backends, Duration.ofSeconds(30))) {
            MemorySegment pool = arena.allocate(bytes, 4096);
            MemorySegment destination = arena.allocate(bytes, 4096);
            Patterns.fill(pool, 17);
            try (LocalRegion poolRegion = store.register(pool, MemoryKind.DRAM)) {
                Reader reader = Reader.of("kvstore-draining", backends, store, destination);
                var read = reader.readWhole(poolRegion);
                reader.engine().close();
                assertThat(read).as("the read posted before close").isDone();
                assertThat(read.get().bytes()).isEqualTo(bytes);
                assertThat(crc(destination)).isEqualTo(crc(pool));
            }
        }
    }

    /**
     * A post that the engine's close overtakes between the check that the engine is open and the queueing
     * of its request in flight neither throws nor hands the request back early: close waits for it, and the
     * transfer finishes before the agent goes.
     */
    @Test
    void postOvertakenByCloseFinishesInsteadOfThrowing() throws Exception {
        Set<String> backends = ucxBackends();
        long bytes = 128L << 20;
        try (Arena arena = Arena.ofShared();
                NixlTransferEngine store =
                        new NixlTransferEngine("kvstore-overtaken-store", backends, Duration.ofSeconds(30))) {
            MemorySegment pool = arena.allocate(bytes, 4096);
            MemorySegment destination = arena.allocate(bytes, 4096);
            try (LocalRegion poolRegion = store.register(pool, MemoryKind.DRAM)) {
                Reader reader = Reader.of("kvstore-overtaken", backends, store, destination);
                NixlTransferEngine engine = reader.engine();
                CountDownLatch posted = new CountDownLatch(1);
                CountDownLatch resume = new CountDownLatch(1);
                engine.beforeQueued = () -> {
                    posted.countDown();
                    awaitQuietly(resume);
                };
                CompletableFuture<CompletableFuture<TransferResult>> read =
                        CompletableFuture.supplyAsync(() -> reader.readWhole(poolRegion));
                assertThat(posted.await(30, TimeUnit.SECONDS))
                        .as("the read was in progress after its post")
                        .isTrue();
                Thread closing = Thread.ofPlatform().start(engine::close);
                closing.join(Duration.ofSeconds(1)); // a close that does not wait for the post is done by now
                resume.countDown();
                closing.join(Duration.ofSeconds(30));
                assertThat(closing.isAlive()).as("close returned").isFalse();
                assertThat(read.get(30, TimeUnit.SECONDS))
                        .as("the read's future, once close returned")
                        .isDone();
                assertThat(read.get().get().bytes()).isEqualTo(bytes);
            }
        }
    }

    /**
     * A completion callback that holds the engine's progress thread longer than close used to wait for it
     * does not leave the requests behind it unanswered: once close returns, every post's future is done.
     */
    @Test
    void closeWaitsForASlowCallbackAndFailsWhatIsStillQueued() throws Exception {
        Set<String> backends = ucxBackends();
        long bytes = 128L << 20;
        try (Arena arena = Arena.ofShared();
                NixlTransferEngine store =
                        new NixlTransferEngine("kvstore-patient-store", backends, Duration.ofSeconds(30))) {
            NixlTransferEngine engine =
                    new NixlTransferEngine("kvstore-slow-callback", backends, Duration.ofSeconds(30));
            MemorySegment pool = arena.allocate(bytes, 4096);
            MemorySegment first = arena.allocate(bytes, 4096);
            MemorySegment second = arena.allocate(bytes, 4096);
            try (LocalRegion poolRegion = store.register(pool, MemoryKind.DRAM)) {
                LocalRegion firstRegion = engine.register(first, MemoryKind.DRAM);
                LocalRegion secondRegion = engine.register(second, MemoryKind.DRAM);
                Peer peer = engine.connect("store", store.localAddress());
                List<TransferSpan> all = List.of(new TransferSpan(0, 0, bytes));
                CountDownLatch inCallback = new CountDownLatch(1);
                CompletableFuture<String> callbackThread = new CompletableFuture<>();
                engine.post(TransferOp.READ, firstRegion, peer, poolRegion.describe(), all)
                        .whenComplete((result, error) -> {
                            callbackThread.complete(Thread.currentThread().getName());
                            inCallback.countDown();
                            sleepQuietly(Duration.ofSeconds(6)); // longer than close's former 5 s wait
                        });
                assertThat(inCallback.await(30, TimeUnit.SECONDS)).isTrue();
                assertThat(callbackThread.get()).startsWith("kvstore-nixl-progress-");
                var queued = engine.post(TransferOp.READ, secondRegion, peer, poolRegion.describe(), all);
                assertThat(queued).as("a read queued behind the slow callback").isNotDone();
                engine.close();
                assertThat(queued)
                        .as("the future of a read posted before close returned")
                        .isDone();
            }
        }
    }

    /**
     * Registering, connecting and closing peers from other threads while the engine closes: each call runs
     * on the live agent or is refused as closed, and none reaches the destroyed agent (which crashed the JVM).
     */
    @Test
    void registerConnectAndPeerCloseRacingCloseRunOrAreRefused() throws Exception {
        Set<String> backends = ucxBackends();
        long seed = Long.getLong("kvstore.nixl.race-seed", 20261127L);
        System.out.println("race seed " + seed + " (-Dkvstore.nixl.race-seed to replay)");
        Random random = new Random(seed);
        List<Throwable> unexpected = new CopyOnWriteArrayList<>();
        int rounds = 0;
        try (Arena arena = Arena.ofShared();
                NixlTransferEngine store =
                        new NixlTransferEngine("kvstore-race-store", backends, Duration.ofSeconds(5))) {
            MemorySegment memory = arena.allocate(1 << 20, 4096);
            byte[] storeAddress = store.localAddress();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            while (System.nanoTime() < end) {
                rounds++;
                NixlTransferEngine engine =
                        new NixlTransferEngine("kvstore-race-" + rounds, backends, Duration.ofSeconds(5));
                Thread connecting = Thread.ofPlatform()
                        .start(() -> untilRefused(
                                unexpected,
                                () -> engine.connect("store", storeAddress).close()));
                Thread registering = Thread.ofPlatform()
                        .start(() -> untilRefused(
                                unexpected,
                                () -> engine.register(memory, MemoryKind.DRAM).close()));
                LockSupport.parkNanos(random.nextInt(3_000_000));
                engine.close();
                connecting.join();
                registering.join();
            }
        }
        System.out.println(rounds + " rounds of register, connect and peer close racing the engine's close");
        assertThat(unexpected)
                .as("calls that failed other than by the closed refusal")
                .isEmpty();
    }

    @Test
    void regionsAndPeersClosedAfterTheirEngineCloseQuietly() throws Exception {
        Set<String> backends = ucxBackends();
        try (Arena arena = Arena.ofShared();
                NixlTransferEngine store =
                        new NixlTransferEngine("kvstore-late-close-store", backends, Duration.ofSeconds(5))) {
            NixlTransferEngine engine = new NixlTransferEngine("kvstore-late-close", backends, Duration.ofSeconds(5));
            LocalRegion region = engine.register(arena.allocate(1 << 20, 4096), MemoryKind.DRAM);
            Peer peer = engine.connect("store", store.localAddress());
            engine.close();

            // as with the UCX engine: the agent took its registrations and connections with it
            region.close();
            peer.close();
            assertThatThrownBy(() -> engine.register(arena.allocate(4096, 4096), MemoryKind.DRAM))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
        }
    }

    /** Repeats {@code call} until it is refused as closed; anything else it throws is {@code unexpected}. */
    /** An engine with {@code destination} registered and connected to {@code store}: what a close test reads with. */
    private record Reader(NixlTransferEngine engine, LocalRegion destination, Peer store) {

        static Reader of(String name, Set<String> backends, NixlTransferEngine store, MemorySegment destination) {
            NixlTransferEngine engine = new NixlTransferEngine(name, backends, Duration.ofSeconds(30));
            LocalRegion region = engine.register(destination, MemoryKind.DRAM);
            return new Reader(engine, region, engine.connect("store", store.localAddress()));
        }

        /** Posts one read of all of {@code pool} into the destination. */
        CompletableFuture<TransferResult> readWhole(LocalRegion pool) {
            return engine.post(
                    TransferOp.READ,
                    destination,
                    store,
                    pool.describe(),
                    List.of(new TransferSpan(0, 0, destination.segment().byteSize())));
        }
    }

    private static void untilRefused(List<Throwable> unexpected, Runnable call) {
        while (true) {
            try {
                call.run();
            } catch (IllegalStateException e) {
                if (!String.valueOf(e.getMessage()).contains("closed")) {
                    unexpected.add(e);
                }
                return;
            } catch (RuntimeException e) {
                unexpected.add(e);
                return;
            }
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleepQuietly(Duration duration) {
        try {
            Thread.sleep(duration);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
