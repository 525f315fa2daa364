package io.kvstore.ffm.nixl;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Registering, deregistering, reading the agent's metadata and loading or invalidating a peer's, from
 * other threads while the agent is closed: each call either runs on the live agent or is refused with
 * "NIXL agent closed", never handed a destroyed agent (a use-after-free that crashes the JVM).
 */
class NixlAgentCloseRaceTest {

    private static final long RACE_NANOS = TimeUnit.SECONDS.toNanos(3);
    /** Threads calling the agent while it closes: one loads and invalidates the peer, two register or read. */
    private static final int CALLERS = 3;

    @Test
    void callsRacingCloseRunOnTheLiveAgentOrAreRefused() throws Exception {
        NixlRequirement.assumeUcx();
        long seed = Long.getLong("kvstore.nixl.race-seed", 20261127L);
        System.out.println("race seed " + seed + " (-Dkvstore.nixl.race-seed to replay)");
        Random random = new Random(seed);
        ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
        AtomicInteger completed = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        int rounds = 0;
        try (Arena arena = Arena.ofShared();
                NixlAgent peer = Nixl.get().createAgent("kvstore-race-peer", new NixlAgent.Config(false, 0));
                NixlBackend peerBackend = peer.createBackend("UCX", Map.of())) {
            MemorySegment memory = arena.allocate(1 << 20, 4096);
            byte[] peerMetadata = peer.localMetadata();
            long end = System.nanoTime() + RACE_NANOS;
            while (System.nanoTime() < end) {
                rounds++;
                NixlAgent agent = Nixl.get().createAgent("kvstore-race-" + rounds, new NixlAgent.Config(false, 0));
                NixlBackend backend = agent.createBackend("UCX", Map.of());
                CountDownLatch start = new CountDownLatch(1);
                List<Thread> callers = new ArrayList<>();
                for (int c = 0; c < CALLERS; c++) {
                    boolean connects = c == 0; // one loader: two would invalidate the peer twice (NOT_FOUND)
                    long callerSeed = random.nextLong();
                    callers.add(Thread.ofPlatform().start(() -> {
                        Random r = new Random(callerSeed);
                        awaitQuietly(start);
                        while (true) {
                            try {
                                call(agent, backend, memory, peerMetadata, connects ? 2 : r.nextInt(2));
                                completed.incrementAndGet();
                            } catch (IllegalStateException e) {
                                if (!isRefusal(e)) {
                                    unexpected.add(e);
                                }
                                refused.incrementAndGet();
                                return;
                            } catch (RuntimeException e) {
                                unexpected.add(e);
                                return;
                            }
                        }
                    }));
                }
                start.countDown();
                LockSupport.parkNanos(random.nextInt(2_000_000));
                backend.close();
                agent.close();
                for (Thread caller : callers) {
                    caller.join();
                }
            }
        }
        System.out.println(rounds + " rounds: " + completed + " calls ran, " + refused + " refused after close");
        assertThat(unexpected)
                .as("calls that failed other than by the closed refusal")
                .isEmpty();
        assertThat(refused.get())
                .as("every caller was refused once the agent closed")
                .isEqualTo(rounds * CALLERS);
    }

    /** One call (and its undoing) on {@code agent}: a registration, its metadata, or loading a peer's. */
    private static void call(NixlAgent agent, NixlBackend backend, MemorySegment memory, byte[] peerMd, int what) {
        switch (what) {
            case 0 -> {
                NixlRegistration registration = agent.register(
                        Nixl.DRAM_SEG, List.of(new NixlDescriptor(memory.address(), memory.byteSize(), 0)), backend);
                registration.close();
            }
            case 1 -> assertThat(agent.localMetadata()).isNotEmpty();
            default -> agent.invalidateRemoteMetadata(agent.loadRemoteMetadata(peerMd));
        }
    }

    /** The refusal of a call on a closed agent (or through its closed backend). */
    private static boolean isRefusal(IllegalStateException e) {
        String message = String.valueOf(e.getMessage());
        return message.startsWith("NIXL agent closed") || message.endsWith(" is closed");
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
