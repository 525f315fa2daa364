package io.kvstore.transfer.nixl;

import io.kvstore.ffm.UseCount;
import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.ffm.nixl.NixlAgent;
import io.kvstore.ffm.nixl.NixlBackend;
import io.kvstore.ffm.nixl.NixlDescriptor;
import io.kvstore.ffm.nixl.NixlException;
import io.kvstore.ffm.nixl.NixlRegistration;
import io.kvstore.ffm.nixl.NixlTransfer;
import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import io.kvstore.transfer.Peer;
import io.kvstore.transfer.RemoteRegion;
import io.kvstore.transfer.TransferEngine;
import io.kvstore.transfer.TransferException;
import io.kvstore.transfer.TransferOp;
import io.kvstore.transfer.TransferResult;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.ListIterator;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link TransferEngine} on NIXL (libnixl_capi): one agent per engine with the backends the
 * {@link io.kvstore.nixl.NixlBackendSelection} enabled, memory registered through registration
 * descriptor lists, peers connected by loading their agent metadata, and each post turned into one
 * NIXL transfer request over the coalesced spans, polled to completion on the engine's progress
 * thread.
 *
 * <p>NIXL keeps registrations in the agent's metadata rather than in per-region keys, so
 * {@link #localAddress()} must be read after the regions a peer will use are registered. A region's
 * {@link LocalRegion#remoteKey()} carries only its NIXL segment type and device id (12 bytes), which
 * the peer needs to build its remote descriptors.
 *
 * <p>A timeout never hands memory back early. NIXL cannot stop a transfer in flight (releasing it only
 * forgets it: UCX's {@code ucp_request_cancel} does not stop an RMA get or put), so a request past its
 * deadline stays polled and its future fails with the timeout once NIXL reports it finished or failed.
 * Until a post's future completes, whatever the outcome, the local spans are NIXL's: neither reuse nor
 * free them. UCX's peer-failure detection bounds the wait. Closing lets what is in flight finish, for 5 s
 * at most, then destroys the agent (its UCX workers) before it fails what is still in flight.
 *
 * <p>The progress thread owns the agent's end: {@link #close()} stops it, and it waits for the posts,
 * connects and address reads under way, then destroys the agent, never while it or a post still calls into
 * it; other calls (register, a region's or peer's close) racing close are refused by the agent or finish
 * before it is destroyed ({@link NixlAgent}). {@code close()}
 * waits for that, except when a completion callback (run on the progress thread) calls it: then it
 * returns at once and the agent goes when the callback returns.
 *
 * <p>Why it is long: post, progress and close share the one in-flight protocol above (a request leaves
 * NIXL only when NIXL reports it ended, or with the agent), and splitting it would spread that protocol
 * over classes that each hold half of the state.
 */
public final class NixlTransferEngine implements TransferEngine {

    private static final Logger LOG = LoggerFactory.getLogger(NixlTransferEngine.class);
    /** Bytes of a region key: segment type (int) and device id (long). */
    private static final int KEY_BYTES = Integer.BYTES + Long.BYTES;
    /** How long the progress thread waits for new work when nothing is in flight. */
    private static final long IDLE_WAIT_MILLIS = 50;
    /**
     * The pause of NIXL's own progress thread between rounds. With none it keeps a quarter of a core
     * busy on an idle agent (measured: 25% of one core for an idle agent with the UCX backend, 5% at
     * 100 us, on a 2-core VM); transfers this engine posts are progressed by polling their status anyway.
     * System property {@code kvstore.nixl.progress-delay-us} overrides it (benchmarks).
     */
    private static final long PROGRESS_DELAY_MICROS = Long.getLong("kvstore.nixl.progress-delay-us", 100);

    private final NixlAgent agent;
    private final Map<String, NixlBackend> backends = new LinkedHashMap<>();
    private final NixlBackend dataBackend;
    private final Duration timeout;
    private final LinkedBlockingQueue<InFlight> submitted = new LinkedBlockingQueue<>();
    private final Thread progress;
    private final AtomicBoolean closed = new AtomicBoolean();
    /**
     * Posts, connects and address reads under way ({@link #whileOpen}): the progress thread destroys the agent
     * only once none is, and none begins after it closed the count.
     */
    private final UseCount posting = new UseCount();
    /** Runs in {@link #post} between posting a request in progress and queueing it: a seam for tests. */
    volatile Runnable beforeQueued = () -> {};

    /** A posted request, its deadline, the caller's future; {@code timedOut} once in progress past the deadline. */
    private record InFlight(
            NixlTransfer transfer,
            CompletableFuture<TransferResult> future,
            long bytes,
            int transfers,
            long startNanos,
            long deadlineNanos,
            String description,
            boolean timedOut) {

        InFlight pastDeadline() {
            return new InFlight(transfer, future, bytes, transfers, startNanos, deadlineNanos, description, true);
        }
    }

    /**
     * Creates the agent {@code agentName} with every backend in {@code enabledBackends} (the
     * selection's {@link io.kvstore.nixl.NixlBackendSelection.Resolved#enabled()}); memory transfers
     * use UCX when enabled, else the first backend.
     *
     * @throws IllegalStateException when NIXL is unavailable, naming why
     * @throws IllegalArgumentException when no backend is enabled
     */
    public NixlTransferEngine(String agentName, Set<String> enabledBackends, Duration timeout) {
        if (!Nixl.availability().available()) {
            throw new IllegalStateException(
                    "NIXL transfer engine unavailable: " + Nixl.availability().detail());
        }
        if (enabledBackends.isEmpty()) {
            throw new IllegalArgumentException("the NIXL transfer engine needs at least one enabled backend");
        }
        this.timeout = timeout;
        this.agent = Nixl.get().createAgent(agentName, new NixlAgent.Config(true, PROGRESS_DELAY_MICROS));
        try {
            for (String name : enabledBackends) {
                backends.put(name, agent.createBackend(name, Map.of()));
            }
        } catch (RuntimeException e) {
            letWireUpSettle();
            backends.values().forEach(NixlBackend::close);
            agent.close();
            throw e;
        }
        this.dataBackend =
                backends.getOrDefault("UCX", backends.values().iterator().next());
        this.progress = Thread.ofPlatform()
                .name("kvstore-nixl-progress-" + agentName)
                .daemon()
                .start(this::progressLoop);
        LOG.info(
                "NIXL agent {} started with backends {} (transfers over {})",
                agentName,
                backends.keySet(),
                dataBackend.plugin());
    }

    @Override
    public String backend() {
        return "NIXL/" + dataBackend.plugin();
    }

    /** This agent's metadata; read it after registering the regions peers will use. */
    @Override
    public byte[] localAddress() {
        return whileOpen(() -> {
            lastAddressNanos = System.nanoTime();
            return agent.localMetadata();
        });
    }

    @Override
    public LocalRegion register(MemorySegment segment, MemoryKind kind) {
        int type = segmentType(kind);
        NixlRegistration registration = agent.register(
                type, List.of(new NixlDescriptor(segment.address(), segment.byteSize(), 0)), dataBackend);
        byte[] key = ByteBuffer.allocate(KEY_BYTES).putInt(type).putLong(0).array();
        return new LocalRegion() {
            @Override
            public MemorySegment segment() {
                return segment;
            }

            @Override
            public MemoryKind kind() {
                return kind;
            }

            @Override
            public byte[] remoteKey() {
                return key.clone();
            }

            @Override
            public void close() {
                closeQuietlyAfterEngine(registration::close);
            }
        };
    }

    /** The NIXL segment type of a memory kind; {@link MemoryKind} follows nixl_mem_t's order. */
    static int segmentType(MemoryKind kind) {
        return switch (kind) {
            case DRAM -> Nixl.DRAM_SEG;
            case VRAM -> Nixl.VRAM_SEG;
            case BLOCK -> Nixl.BLK_SEG;
            case OBJECT -> Nixl.OBJ_SEG;
            case FILE -> Nixl.FILE_SEG;
        };
    }

    private static final long WIRE_UP_SETTLE_NANOS = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(500);
    /** How long closing lets the transfers in flight finish before it destroys the agent under them. */
    private static final long CLOSE_DRAIN_NANOS = TimeUnit.SECONDS.toNanos(5);

    private volatile long lastConnectNanos;
    /** When this agent's address was last handed out: a peer may be wiring up a connection to it since. */
    private volatile long lastAddressNanos;

    /**
     * Loads the peer's metadata. Counted like a post, so the progress thread's end, which waits for both,
     * sees the time of every wire-up begun before close and lets it settle before destroying the agent.
     */
    @Override
    public Peer connect(String name, byte[] peerAddress) {
        String remoteAgent = whileOpen(() -> {
            String loaded = agent.loadRemoteMetadata(peerAddress);
            lastConnectNanos = System.nanoTime();
            return loaded;
        });
        LOG.info("NIXL agent {} connected to peer {} (agent {})", agent.name(), name, remoteAgent);
        return new NixlPeer(name, remoteAgent, this);
    }

    /**
     * Runs {@code call} unless the engine is closed, counted in {@link #posting}: the progress thread
     * destroys the agent only after it returned. Register and a region's or peer's close need no count:
     * the agent refuses them once closed ({@link NixlAgent}) and is destroyed only after those under way.
     */
    private <T> T whileOpen(Supplier<T> call) {
        if (!posting.tryEnter()) {
            throw closedException();
        }
        try {
            if (closed.get()) { // counted before this check: a close that this call did not see waits for it
                throw closedException();
            }
            return call.get();
        } finally {
            posting.exit();
        }
    }

    private IllegalStateException closedException() {
        return new IllegalStateException("NIXL transfer engine of agent " + agent.name() + " is closed");
    }

    /** A peer: the remote agent whose metadata this engine loaded. */
    private record NixlPeer(String name, String remoteAgent, NixlTransferEngine engine) implements Peer {
        @Override
        public void close() {
            engine.closeQuietlyAfterEngine(() -> engine.agent.invalidateRemoteMetadata(remoteAgent));
        }
    }

    /**
     * A region's or peer's close: after the engine's own, nothing (as with the UCX engine), since destroying the
     * agent took its registrations and connections with it; racing it, the agent's refusal is not an error either.
     */
    private void closeQuietlyAfterEngine(Runnable close) {
        if (closed.get()) {
            return;
        }
        try {
            close.run();
        } catch (IllegalStateException refused) {
            if (!closed.get()) {
                throw refused;
            }
        }
    }

    @Override
    public CompletableFuture<TransferResult> post(
            TransferOp op, LocalRegion local, Peer peer, RemoteRegion remote, List<TransferSpan> spans) {
        if (!(peer instanceof NixlPeer nixlPeer) || nixlPeer.engine() != this) {
            throw new IllegalArgumentException("peer " + peer.name() + " was not connected by this engine");
        }
        CompletableFuture<TransferResult> future = new CompletableFuture<>();
        Runnable answer = whileOpen(() -> submit(op, local, nixlPeer, remote, spans, future));
        answer.run(); // completes the future, if it ended already, outside: its callbacks may close this engine
        return future;
    }

    /** Posts the request; returns what completes {@code future} when it ended already, else queues it. */
    private Runnable submit(
            TransferOp op,
            LocalRegion local,
            NixlPeer peer,
            RemoteRegion remote,
            List<TransferSpan> spans,
            CompletableFuture<TransferResult> future) {
        byte[] key = remote.remoteKey();
        if (key.length != KEY_BYTES) {
            throw new IllegalArgumentException("remote region key of " + key.length
                    + " bytes is not a NIXL region key (" + KEY_BYTES + " bytes: segment type and device id)");
        }
        ByteBuffer k = ByteBuffer.wrap(key);
        int remoteType = k.getInt();
        long remoteDevice = k.getLong();
        List<TransferSpan> merged = TransferSpan.coalesce(spans);
        List<NixlDescriptor> localDescs = new ArrayList<>(merged.size());
        List<NixlDescriptor> remoteDescs = new ArrayList<>(merged.size());
        long bytes = 0;
        long base = local.segment().address();
        for (TransferSpan s : merged) {
            if (s.localOffset() + s.length() > local.segment().byteSize()
                    || s.remoteOffset() + s.length() > remote.length()) {
                throw new IllegalArgumentException("span " + s + " lies outside the local region ("
                        + local.segment().byteSize() + " bytes) or the remote one (" + remote.length() + " bytes)");
            }
            localDescs.add(new NixlDescriptor(base + s.localOffset(), s.length(), 0));
            remoteDescs.add(new NixlDescriptor(remote.address() + s.remoteOffset(), s.length(), remoteDevice));
            bytes += s.length();
        }
        String description =
                op + " of " + bytes + " bytes in " + merged.size() + " transfer(s) with peer " + peer.name();
        long start = System.nanoTime();
        NixlTransfer transfer;
        try {
            transfer = agent.createTransfer(
                    op == TransferOp.READ ? Nixl.XFER_READ : Nixl.XFER_WRITE,
                    segmentType(local.kind()),
                    localDescs,
                    remoteType,
                    remoteDescs,
                    peer.remoteAgent(),
                    dataBackend,
                    null);
        } catch (NixlException e) {
            return () -> future.completeExceptionally(
                    new TransferException("NIXL " + description + " could not be created: " + e.getMessage(), e));
        }
        InFlight work = new InFlight(
                transfer, future, bytes, merged.size(), start, start + timeout.toNanos(), description, false);
        try {
            if (transfer.post()) {
                release(work);
                return () -> succeed(work);
            }
        } catch (NixlException e) {
            release(work);
            return () -> failFuture(work, "failed to post", e);
        }
        beforeQueued.run();
        submitted.add(work); // also when closed since the check: the progress thread takes it before its end
        return () -> {};
    }

    private void progressLoop() {
        List<InFlight> active = new ArrayList<>();
        try {
            pollUntilClosed(active);
        } finally {
            end(active); // also after an unexpected error: the agent goes with this thread, never before it
        }
    }

    private void pollUntilClosed(List<InFlight> active) {
        while (!closed.get()) {
            try {
                if (active.isEmpty()) {
                    InFlight next = submitted.poll(IDLE_WAIT_MILLIS, TimeUnit.MILLISECONDS);
                    if (next != null) {
                        active.add(next);
                    }
                }
                submitted.drainTo(active);
                pollAll(active);
                if (!active.isEmpty()) {
                    Thread.onSpinWait();
                }
            } catch (InterruptedException e) {
                break;
            }
        }
    }

    /**
     * Destroys the agent once no post is under way (one that began before close queues its request) and the
     * transfers in flight finished, or {@link #CLOSE_DRAIN_NANOS} passed; then fails what was still in flight:
     * destroying the agent (its UCX workers) stops those transfers; releasing them would not, so they are only
     * abandoned right before it.
     */
    private void end(List<InFlight> active) {
        closed.set(true); // also when the loop ended otherwise
        posting.closeAndAwait(); // no post begins after this
        submitted.drainTo(active);
        try {
            drain(active);
            letWireUpSettle();
            active.forEach(this::abandon);
            backends.values().forEach(NixlBackend::close);
            agent.close();
            LOG.info("NIXL agent {} closed", agent.name());
        } catch (RuntimeException e) {
            LOG.error("closing NIXL agent {} failed", agent.name(), e);
        } finally {
            for (InFlight work : active) {
                work.future()
                        .completeExceptionally(new TransferException(
                                "NIXL " + work.description() + " was abandoned: the engine closed"));
            }
        }
    }

    /**
     * Polls the transfers in flight at close until they ended or {@link #CLOSE_DRAIN_NANOS} passed. Why: a
     * transfer that finishes reports its outcome instead of failing as abandoned, and UCX 1.13 may abort the
     * process when an agent is destroyed under a request in flight (an assertion in {@code ucp_ep.c}).
     */
    private void drain(List<InFlight> active) {
        if (active.isEmpty()) {
            return;
        }
        int atClose = active.size();
        long start = System.nanoTime();
        while (!active.isEmpty() && System.nanoTime() - start < CLOSE_DRAIN_NANOS) {
            pollAll(active);
            Thread.onSpinWait();
        }
        if (active.isEmpty()) {
            LOG.info("NIXL agent {}: the {} transfer(s) in flight at close ended", agent.name(), atClose);
        } else {
            LOG.warn(
                    "NIXL agent {}: {} of {} transfer(s) in flight at close still running after {} ms; abandoned",
                    agent.name(),
                    active.size(),
                    atClose,
                    TimeUnit.NANOSECONDS.toMillis(CLOSE_DRAIN_NANOS));
        }
    }

    private void abandon(InFlight work) {
        try {
            work.transfer().abandon();
        } catch (NixlException e) {
            LOG.warn("releasing NIXL request {} failed: {}", work.description(), e.getMessage());
        }
    }

    /** Polls every request in {@code active} once ({@link #poll}). */
    private void pollAll(List<InFlight> active) {
        for (ListIterator<InFlight> it = active.listIterator(); it.hasNext(); ) {
            poll(it, it.next());
        }
    }

    /** Polls one request: it leaves {@code active} once finished or failed; past its deadline it is only marked. */
    private void poll(ListIterator<InFlight> it, InFlight work) {
        try {
            if (work.transfer().isDone()) {
                it.remove();
                if (work.timedOut()) {
                    fail(work, timedOut(work, "finished"), null);
                } else {
                    finish(work);
                }
            } else if (!work.timedOut() && System.nanoTime() > work.deadlineNanos()) {
                it.set(work.pastDeadline());
                LOG.warn(
                        "NIXL {} timed out after {}; NIXL cannot stop it, so it fails once NIXL lets go of its memory",
                        work.description(),
                        timeout);
            }
        } catch (NixlException e) {
            it.remove();
            fail(work, work.timedOut() ? timedOut(work, "failed") : "failed", e);
        }
    }

    private String timedOut(InFlight work, String ended) {
        return "timed out after " + timeout + " (NIXL cannot cancel a transfer in flight; it " + ended + " after "
                + Duration.ofNanos(System.nanoTime() - work.startNanos()) + ", and only then was this reported)";
    }

    private void finish(InFlight work) {
        release(work);
        succeed(work);
    }

    private void fail(InFlight work, String what, NixlException cause) {
        release(work);
        failFuture(work, what, cause);
    }

    private static void succeed(InFlight work) {
        work.future()
                .complete(new TransferResult(
                        work.bytes(), work.transfers(), Duration.ofNanos(System.nanoTime() - work.startNanos())));
    }

    private static void failFuture(InFlight work, String what, NixlException cause) {
        String message = "NIXL " + work.description() + " " + what + (cause == null ? "" : ": " + cause.getMessage());
        work.future()
                .completeExceptionally(
                        cause == null ? new TransferException(message) : new TransferException(message, cause));
    }

    private void release(InFlight work) {
        try {
            work.transfer().close();
        } catch (NixlException e) {
            LOG.warn("releasing NIXL request {} failed: {}", work.description(), e.getMessage());
        }
    }

    /**
     * UCX 1.13 aborts the process (assertion in ucp_request.c, from ucp_worker_destroy) when a worker is
     * destroyed while a connection's wire-up messages are still pending over TCP. CI saw it twice with agents
     * closed right after a connection was made, before any transfer: first when the agent that connected was
     * closed, later (2026-11-26) when the agent it connected to was, its wire-up reply (REP) still queued. So
     * an agent that connected, or handed its address to a peer, in the last {@link #WIRE_UP_SETTLE_NANOS}
     * waits out the rest of that time before it is destroyed.
     */
    private void letWireUpSettle() {
        long now = System.nanoTime();
        long wait = Math.max(settleLeft(lastConnectNanos, now), settleLeft(lastAddressNanos, now));
        if (wait > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(wait);
        }
    }

    /** What is left of the settle time of a wire-up that may have begun at {@code at} (0: none began). */
    private static long settleLeft(long at, long now) {
        return at == 0 ? 0 : WIRE_UP_SETTLE_NANOS - (now - at);
    }

    /**
     * Stops the progress thread and waits, without a time limit (a poll is short), until it destroyed the
     * agent and failed what was in flight; from a completion callback, returns at once (see the class).
     */
    @Override
    public void close() {
        closed.set(true);
        if (Thread.currentThread() == progress) {
            return;
        }
        boolean interrupted = false;
        while (progress.isAlive()) {
            try {
                progress.join();
            } catch (InterruptedException e) {
                interrupted = true; // the agent must not be in use when close returns: wait on
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
