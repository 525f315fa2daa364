package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.ffm.ucx.UcpMemory;
import io.kvstore.ffm.ucx.UcxException;
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
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link TransferEngine} on UCX's libucp directly: the fallback when NIXL is absent. One UCP
 * context and one worker per engine, driven by a dedicated progress thread; callers only enqueue
 * work and get a {@link CompletableFuture}.
 *
 * <p><b>Parts.</b> This class checks arguments and hands work to the {@link ProgressLoop}, the thread
 * that owns the {@link WorkerContext} (context, worker, callback stubs). On that thread the
 * {@link Connector} opens endpoints and picks each peer's path ({@link PathChoice}), {@link Posting}
 * cuts requests into chunks for the {@link RmaPoster} or the {@link ActiveMessagePoster}, the
 * {@link OperationTable} tracks every operation and deadline, the {@link ActiveMessageServer} serves
 * peers' messages ({@link AmHeader} is the wire format) and the {@link RegionTable} holds the registered
 * memory. Peers and regions close through callbacks this class gives them.
 *
 * <p><b>Two data paths, chosen per peer from the lanes UCX selected</b> (the rule and its reasons are in
 * {@link PathChoice}): {@link UcxPath#RMA} where the transport does one-sided RMA natively (shared
 * memory, RDMA), {@link UcxPath#ACTIVE_MESSAGES} over tcp: a WRITE is a message carrying the bytes,
 * which the peer's engine writes into its registered memory after checking the range lies inside a
 * region it registered, then acknowledges; a READ is a request message answered with the bytes. Large
 * spans travel as several messages of at most {@link UcxSettings#maxMessageBytes()}.
 *
 * <p><b>Threading.</b> The worker is created in {@code UCS_THREAD_MODE_SINGLE} and touched only by
 * the progress thread, so UCX takes no lock per call and every table is confined to that thread.
 *
 * <p><b>Failure.</b> Every request has a deadline ({@link UcxSettings#requestTimeout()}); when it
 * passes, or UCX reports the endpoint failed, the request fails with a {@link TransferException}
 * naming the peer and status, and the endpoint is force-closed so no late byte lands in local
 * memory. Over shared memory (no peer-failure mode in UCX 1.13) the peer's death is not observed by
 * RMA at all: the bytes move without the peer's CPU, into memory that stays mapped.
 */
public final class UcxTransferEngine implements TransferEngine {

    private static final Logger LOG = LoggerFactory.getLogger(UcxTransferEngine.class);

    private final UcxSettings settings;
    /** Stamped on this engine's peers and regions, so {@link #post} can refuse another engine's. */
    private final Object identity = new Object();

    private final ProgressLoop loop;
    private volatile byte[] address;

    // Progress-thread state, created when the loop opens the worker.
    private volatile WorkerContext worker;
    private OperationTable ops;
    private RegionTable regions;
    private Connector connector;
    private Posting posting;

    /** Starts an engine with {@link UcxSettings#defaults()}. */
    public static UcxTransferEngine create() {
        return create(UcxSettings.defaults());
    }

    /**
     * Creates the UCP context and worker on a new progress thread.
     *
     * @throws TransferException when libucp is unavailable (with the reason) or UCX fails to start
     */
    public static UcxTransferEngine create(UcxSettings settings) {
        if (!Ucp.isAvailable()) {
            throw new TransferException("UCX transfer engine unavailable: libucp " + Ucp.availability());
        }
        UcxTransferEngine engine = new UcxTransferEngine(settings);
        try {
            engine.loop.started().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new TransferException(
                    "UCX engine failed to start: " + e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException | InterruptedException e) {
            engine.close();
            throw new TransferException("UCX engine did not start within 30 s", e);
        }
        return engine;
    }

    private UcxTransferEngine(UcxSettings settings) {
        this.settings = settings;
        this.loop = new ProgressLoop("ucx-progress", new Driver());
        loop.start(); // after the assignment: the driver's open() refers to the loop
    }

    @Override
    public String backend() {
        return "UCX";
    }

    @Override
    public byte[] localAddress() {
        return address.clone();
    }

    public UcxSettings settings() {
        return settings;
    }

    @Override
    public LocalRegion register(MemorySegment segment, MemoryKind kind) {
        if (kind != MemoryKind.DRAM) {
            throw new IllegalArgumentException("UCX engine registers host memory (DRAM) only, got " + kind);
        }
        if (!segment.isNative() || segment.byteSize() == 0) {
            throw new IllegalArgumentException("UCX can register only non-empty native memory, got " + segment);
        }
        return loop.call(
                "register " + segment.byteSize() + " bytes at 0x" + Long.toHexString(segment.address()),
                () -> addRegion(worker.context().map(segment), segment));
    }

    /**
     * Allocates {@code bytes} of host memory through UCX ({@code UCP_MEM_MAP_ALLOCATE}) and registers
     * it. Over shared memory this is the fast case: UCX backs it with a shared segment that a
     * same-host peer maps, so its RMA is a plain copy (see docs/benchmarks.md), whereas memory
     * registered with {@link #register} is reached through cma or UCX's message-based emulation.
     * Closing the region frees the memory.
     */
    public LocalRegion allocate(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("allocation must be positive, got " + bytes);
        }
        return loop.call("allocate " + bytes + " bytes", () -> {
            UcpMemory memory = worker.context().allocate(bytes);
            return addRegion(memory, memory.segment());
        });
    }

    private UcxRegion addRegion(UcpMemory memory, MemorySegment segment) {
        UcxRegion region = new UcxRegion(memory, segment, identity, this::closeRegion);
        regions.add(region);
        return region;
    }

    @Override
    public UcxPeer connect(String name, byte[] peerAddress) {
        if (peerAddress == null || peerAddress.length == 0) {
            throw new IllegalArgumentException("peer address of " + name + " is empty");
        }
        byte[] addr = peerAddress.clone();
        try {
            return loop.call("connect to " + name, () -> connector.connect(name, addr));
        } catch (UcxException e) {
            // e.g. a peer that died: UCX times the endpoint out during wire-up
            throw new TransferException("UCX connect to " + name + " failed: " + e.getMessage(), e);
        }
    }

    @Override
    public CompletableFuture<TransferResult> post(
            TransferOp op, LocalRegion local, Peer peer, RemoteRegion remote, List<TransferSpan> spans) {
        if (!(local instanceof UcxRegion region) || !region.ownedBy(identity)) {
            throw new IllegalArgumentException("local region was not registered with this UCX engine");
        }
        if (!(peer instanceof UcxPeer p) || !p.ownedBy(identity)) {
            throw new IllegalArgumentException("peer " + peer.name() + " was not connected by this UCX engine");
        }
        RegionKey key = RegionKey.decode(remote.remoteKey());
        if (key.address() != remote.address() || key.length() != remote.length()) {
            throw new TransferException("remote region 0x" + Long.toHexString(remote.address()) + "+" + remote.length()
                    + " does not match its key, which covers 0x" + Long.toHexString(key.address()) + "+"
                    + key.length());
        }
        List<TransferSpan> merged = TransferSpan.coalesce(spans);
        long total = 0;
        for (TransferSpan s : merged) {
            if (s.localOffset() + s.length() > region.segment().byteSize()
                    || s.remoteOffset() + s.length() > remote.length()) {
                throw new IllegalArgumentException("span " + s + " lies outside local region of "
                        + region.segment().byteSize() + " bytes or remote region of " + remote.length() + " bytes");
            }
            total += s.length();
        }
        UcxRequest request = new UcxRequest(op, p, total, merged.size(), System.nanoTime());
        loop.execute(() -> posting.start(request, region, key, merged));
        return request.future;
    }

    @Override
    public void close() {
        loop.stop();
    }

    /** A peer's close: its endpoint closes on the progress thread, unforced. */
    private void closePeer(UcxPeer peer) {
        if (!loop.running()) {
            return;
        }
        try {
            loop.call("close peer " + peer.name(), () -> {
                connector.close(peer, false);
                return null;
            });
        } catch (TransferException e) {
            LOG.warn("closing UCX peer {}: {}", peer.name(), e.getMessage());
        }
    }

    /**
     * A region's close. Before it is unmapped, every operation still reading or writing it finishes (a
     * caller may close a region while another thread's request into it is in flight, or right after a
     * request failed part-way): unmapping under UCX would make it copy into freed memory and crash the
     * process. Past the deadline the peers concerned are disconnected by force, which cancels their
     * operations.
     */
    private void closeRegion(UcxRegion region) {
        if (!loop.running()) {
            return;
        }
        loop.call("deregister region", () -> {
            region.closed = true;
            long deadline =
                    System.nanoTime() + Math.min(settings.requestTimeout().toNanos(), TimeUnit.SECONDS.toNanos(20));
            List<UcxPeer> stuck = ops.drain(region, deadline);
            for (UcxPeer p : stuck) {
                LOG.warn("region closed with operations to {} in flight; disconnecting that peer", p.name());
                connector.disconnect(p);
            }
            if (!stuck.isEmpty()) {
                ops.forgetIdleOn(region);
            }
            if (ops.servingFrom(region)) {
                // UCX is still sending a peer's READ reply from it (or receiving its WRITE into it): unmapping
                // now would have UCX touch freed memory and abort the process. It serves no new request
                // (closed) and is unmapped when the engine closes, after its endpoints.
                LOG.warn(
                        "{} closed while still serving a peer past the deadline; unmapped when the engine closes",
                        region);
                return null;
            }
            regions.unmap(region);
            return null;
        });
    }

    /** What the progress loop drives: this engine's worker and tables. */
    private final class Driver implements ProgressLoop.Driver {

        @Override
        public void open() {
            WorkerContext w = WorkerContext.open(settings.ucxConfig());
            try {
                ops = new OperationTable(w);
                regions = new RegionTable();
                connector = new Connector(
                        w, ops, settings.path(), identity, UcxTransferEngine.this::closePeer, loop::later);
                RmaPoster rma = new RmaPoster(w, ops);
                ActiveMessagePoster activeMessages = new ActiveMessagePoster(w, ops);
                posting = new Posting(ops, settings, rma, activeMessages);
                w.onCompletion(ops::onSendComplete, ops::onRecvComplete, connector::onEndpointError);
                new ActiveMessageServer(w, ops, regions).install();
                activeMessages.install();
            } catch (RuntimeException e) {
                w.close();
                throw e;
            }
            address = w.address();
            worker = w;
            LOG.info(
                    "UCX engine started: {}, config {}, path {}",
                    Ucp.availability().detail(),
                    settings.ucxConfig(),
                    settings.path());
        }

        @Override
        public int progress() {
            return worker.worker().progress();
        }

        @Override
        public boolean busy() {
            return !ops.isEmpty();
        }

        @Override
        public void tick(long nowNanos) {
            for (UcxPeer timedOut : ops.expire(nowNanos)) {
                connector.disconnect(timedOut);
            }
        }

        @Override
        public void await(int millis) {
            worker.worker().await(millis);
        }

        @Override
        public void signal() {
            WorkerContext w = worker;
            if (w != null) {
                w.signal();
            }
        }

        @Override
        public void shutdown() {
            if (ops != null) {
                ops.failAll();
            }
            if (connector != null) {
                connector.closeAll();
            }
            if (regions != null) {
                regions.unmapAll();
            }
            if (worker != null) {
                worker.close();
            }
            LOG.info("UCX engine stopped");
        }
    }
}
