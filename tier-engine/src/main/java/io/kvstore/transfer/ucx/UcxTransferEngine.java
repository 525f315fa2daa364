package io.kvstore.transfer.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.ffm.ucx.UcpContext;
import io.kvstore.ffm.ucx.UcpEndpoint;
import io.kvstore.ffm.ucx.UcpMemory;
import io.kvstore.ffm.ucx.UcpRemoteKey;
import io.kvstore.ffm.ucx.UcpStatus;
import io.kvstore.ffm.ucx.UcpWorker;
import io.kvstore.transfer.LocalRegion;
import io.kvstore.transfer.MemoryKind;
import io.kvstore.transfer.Peer;
import io.kvstore.transfer.RemoteRegion;
import io.kvstore.transfer.TransferEngine;
import io.kvstore.transfer.TransferException;
import io.kvstore.transfer.TransferOp;
import io.kvstore.transfer.TransferResult;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link TransferEngine} on UCX's libucp directly: the fallback when NIXL is absent. One UCP
 * context and one worker per engine, driven by a dedicated progress thread; callers only enqueue
 * work and get a {@link CompletableFuture}.
 *
 * <p><b>Two data paths, chosen per peer from the lanes UCX selected.</b> With Debian's UCX 1.13,
 * one-sided RMA is fast where the transport does it natively (shared memory: sysv/posix/cma, and
 * RDMA) but emulated and pathologically slow over tcp, while active messages over tcp run near wire
 * speed. On {@link #connect} the engine first opens an endpoint without peer-failure handling (UCX
 * 1.13 drops every shared-memory transport when {@code UCP_ERR_HANDLING_MODE_PEER} is asked for),
 * reads {@code ucp_ep_print_info} and, when a lane carrying {@code rma_bw} is not tcp, keeps it for
 * {@link UcxPath#RMA}. Otherwise it reconnects in PEER mode (so a dead peer fails requests at once)
 * and uses RMA if the new endpoint has a non-tcp {@code rma_bw} lane (RDMA), else
 * {@link UcxPath#ACTIVE_MESSAGES}: a WRITE is a message carrying the bytes, which the peer's engine
 * writes into its registered memory after checking the range lies inside a region it registered,
 * then acknowledges; a READ is a request message answered with the bytes. Large spans travel as
 * several messages of at most {@link UcxSettings#maxMessageBytes()}; UCX itself picks eager or
 * rendezvous per message.
 *
 * <p><b>Threading.</b> The worker is created in {@code UCS_THREAD_MODE_SINGLE} and touched only by
 * the progress thread, so UCX takes no lock per call and every table below is confined to that
 * thread. The thread spins on {@code ucp_worker_progress} while requests are in flight (as
 * ucx_perftest does) and sleeps on the worker's event descriptor when idle; other threads wake it
 * with {@code ucp_worker_signal}.
 *
 * <p><b>Failure.</b> Every request has a deadline ({@link UcxSettings#requestTimeout()}); when it
 * passes, or UCX reports the endpoint failed, the request fails with a {@link TransferException}
 * naming the peer and status, and the endpoint is force-closed so no late byte lands in local
 * memory. Over shared memory (no peer-failure mode in UCX 1.13) the peer's death is not observed by
 * RMA at all: the bytes move without the peer's CPU, into memory that stays mapped.
 */
public final class UcxTransferEngine implements TransferEngine {

    private static final Logger LOG = LoggerFactory.getLogger(UcxTransferEngine.class);

    static final int AM_WRITE = 11;
    static final int AM_WRITE_ACK = 12;
    static final int AM_READ = 13;
    static final int AM_READ_REPLY = 14;
    /** Header of WRITE and READ: op id, remote address, length. */
    private static final long REQUEST_HEADER = 24;
    /** Header of WRITE_ACK and READ_REPLY: op id, status. */
    private static final long REPLY_HEADER = 16;

    private static final Pattern LANE = Pattern.compile("lane\\[\\d+]:\\s+\\d+:(\\w+)/\\S+.*");
    private static final long CONTROL_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final int SPINS_BEFORE_SLEEP = 2_000;

    private final UcxSettings settings;
    private final Thread thread;
    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private volatile boolean running = true;
    private volatile byte[] address;

    // Progress-thread state.
    private final Arena callbacks = Arena.ofShared();
    private UcpContext context;
    private UcpWorker worker;
    private MemorySegment sendCallback;
    private MemorySegment recvCallback;
    private MemorySegment errorCallback;
    private long nextId = 1;
    private final Map<Long, UcxOp> ops = new HashMap<>();
    private final Map<Long, UcxPeer> peersById = new HashMap<>();
    private final TreeMap<Long, Registration> registered = new TreeMap<>();
    private final ArrayDeque<UcxRequest> requests = new ArrayDeque<>();
    private final ArrayDeque<MemorySegment> headers = new ArrayDeque<>();
    private long lastDeadlineCheck;

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
            engine.started.get(30, TimeUnit.SECONDS);
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
        this.thread = Thread.ofPlatform().daemon().name("ucx-progress").start(this::run);
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
        return call("register " + segment.byteSize() + " bytes at 0x" + Long.toHexString(segment.address()), () -> {
            UcpMemory memory = context.map(segment);
            Registration r = new Registration(memory, segment);
            registered.put(segment.address(), r);
            return r;
        });
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
        return call("allocate " + bytes + " bytes", () -> {
            UcpMemory memory = context.allocate(bytes);
            Registration r = new Registration(memory, memory.segment());
            registered.put(memory.segment().address(), r);
            return r;
        });
    }

    @Override
    public UcxPeer connect(String name, byte[] peerAddress) {
        if (peerAddress == null || peerAddress.length == 0) {
            throw new IllegalArgumentException("peer address of " + name + " is empty");
        }
        byte[] addr = peerAddress.clone();
        try {
            return call("connect to " + name, () -> openPeer(name, addr));
        } catch (io.kvstore.ffm.ucx.UcxException e) {
            // e.g. a peer that died: UCX times the endpoint out during wire-up
            throw new TransferException("UCX connect to " + name + " failed: " + e.getMessage(), e);
        }
    }

    @Override
    public CompletableFuture<TransferResult> post(
            TransferOp op, LocalRegion local, Peer peer, RemoteRegion remote, List<TransferSpan> spans) {
        if (!(local instanceof Registration reg) || reg.engine() != this) {
            throw new IllegalArgumentException("local region was not registered with this UCX engine");
        }
        if (!(peer instanceof UcxPeer p) || p.engine() != this) {
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
            if (s.localOffset() + s.length() > reg.segment().byteSize()
                    || s.remoteOffset() + s.length() > remote.length()) {
                throw new IllegalArgumentException("span " + s + " lies outside local region of "
                        + reg.segment().byteSize() + " bytes or remote region of " + remote.length() + " bytes");
            }
            total += s.length();
        }
        UcxRequest request = new UcxRequest(op, p, total, merged.size(), System.nanoTime());
        submit(() -> start(request, reg, key, merged));
        return request.future;
    }

    @Override
    public void close() {
        if (!running) {
            return;
        }
        CompletableFuture<Void> stopped = new CompletableFuture<>();
        commands.add(() -> {
            running = false;
            stopped.complete(null);
        });
        wake();
        try {
            stopped.get(30, TimeUnit.SECONDS);
            thread.join(TimeUnit.SECONDS.toMillis(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.warn("UCX progress thread did not stop in 30 s", e);
        }
    }

    // ---------------------------------------------------------------- progress thread

    private void run() {
        try {
            context = UcpContext.create(Ucp.FEATURE_RMA | Ucp.FEATURE_AM | Ucp.FEATURE_WAKEUP, settings.ucxConfig());
            worker = UcpWorker.create(context);
            sendCallback = Ucp.sendCallback(this::onSendComplete, callbacks);
            recvCallback = Ucp.recvDataCallback(this::onRecvComplete, callbacks);
            errorCallback = Ucp.errorHandler(this::onEndpointError, callbacks);
            worker.setAmHandler(AM_WRITE, Ucp.amHandler(this::onWrite, callbacks), MemorySegment.NULL);
            worker.setAmHandler(AM_WRITE_ACK, Ucp.amHandler(this::onReply, callbacks), MemorySegment.NULL);
            worker.setAmHandler(AM_READ, Ucp.amHandler(this::onRead, callbacks), MemorySegment.NULL);
            worker.setAmHandler(AM_READ_REPLY, Ucp.amHandler(this::onReply, callbacks), MemorySegment.NULL);
            address = worker.address();
            LOG.info(
                    "UCX engine started: {}, config {}, path {}",
                    Ucp.availability().detail(),
                    settings.ucxConfig(),
                    settings.path());
            started.complete(null);
        } catch (Throwable t) {
            running = false;
            started.completeExceptionally(t);
            shutdown();
            return;
        }
        int idle = 0;
        while (running) {
            Runnable command;
            boolean worked = false;
            while ((command = commands.poll()) != null) {
                runSafely(command);
                worked = true;
            }
            long now = System.nanoTime();
            if (now - lastDeadlineCheck > 5_000_000) {
                lastDeadlineCheck = now;
                expireRequests(now);
            }
            if (worker.progress() > 0 || worked) {
                idle = 0;
                continue;
            }
            if (!ops.isEmpty() && ++idle < SPINS_BEFORE_SLEEP) {
                Thread.onSpinWait();
                continue;
            }
            idle = 0;
            if (commands.isEmpty()) {
                worker.await(ops.isEmpty() ? 100 : 1);
            }
        }
        shutdown();
    }

    private void runSafely(Runnable command) {
        try {
            command.run();
        } catch (Throwable t) {
            LOG.error("UCX engine command failed", t);
        }
    }

    private void shutdown() {
        for (UcxRequest r : requests) {
            r.fail(new TransferException("UCX engine closed before the request to " + r.peer.name() + " finished"));
        }
        for (UcxPeer p : new ArrayList<>(peersById.values())) {
            closeEndpoint(p, true);
        }
        for (Registration r : registered.values()) {
            r.memory.close();
        }
        registered.clear();
        if (worker != null) {
            worker.close();
        }
        if (context != null) {
            context.close();
        }
        callbacks.close();
        LOG.info("UCX engine stopped");
    }

    private void submit(Runnable command) {
        if (!running) {
            throw new TransferException("UCX engine is closed");
        }
        commands.add(command);
        wake();
    }

    private void wake() {
        if (Thread.currentThread() != thread && worker != null) {
            worker.signal();
        }
    }

    private <T> T call(String what, Callable<T> task) {
        CompletableFuture<T> result = new CompletableFuture<>();
        submit(() -> {
            try {
                result.complete(task.call());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        });
        try {
            return result.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new TransferException("UCX " + what + " failed: " + cause, cause);
        } catch (TimeoutException e) {
            throw new TransferException("UCX " + what + " did not finish within 30 s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException("interrupted during UCX " + what);
        }
    }

    // ---------------------------------------------------------------- connecting

    private UcxPeer openPeer(String name, byte[] peerAddress) {
        long id = nextId++;
        UcxPath wanted = settings.path();
        if (wanted != UcxPath.ACTIVE_MESSAGES) {
            UcpEndpoint ep = worker.connect(peerAddress, Ucp.ERR_MODE_NONE, MemorySegment.NULL, MemorySegment.NULL);
            UcxPeer peer = new UcxPeer(this, name, id, ep, UcxPath.RMA, false);
            String transport = settle(peer);
            if (wanted == UcxPath.RMA || (transport != null && !transport.equals("tcp"))) {
                return accept(peer, transport);
            }
            closeEndpoint(peer, false);
        }
        UcpEndpoint ep = worker.connect(peerAddress, Ucp.ERR_MODE_PEER, errorCallback, MemorySegment.ofAddress(id));
        UcxPeer peer = new UcxPeer(this, name, id, ep, UcxPath.ACTIVE_MESSAGES, true);
        String transport = settle(peer);
        if (wanted == UcxPath.AUTO && transport != null && !transport.equals("tcp")) {
            peer = new UcxPeer(this, name, id, ep, UcxPath.RMA, true);
        }
        return accept(peer, transport);
    }

    private UcxPeer accept(UcxPeer peer, String rmaTransport) {
        peersById.put(peer.id, peer);
        LOG.info(
                "UCX connected to {}: path {} (rma_bw lane: {}, peer-failure detection: {})",
                peer.name(),
                peer.path(),
                rmaTransport == null ? "none" : rmaTransport,
                peer.errorMode);
        return peer;
    }

    /**
     * Flushes a new endpoint so wire-up finishes, then returns the transport of its first
     * {@code rma_bw} lane (null when it has none).
     */
    private String settle(UcxPeer peer) {
        long deadline = System.nanoTime() + CONTROL_TIMEOUT_NANOS;
        UcxOp flush = new UcxOp(nextId++, null, UcxOpKind.CONTROL);
        ops.put(flush.id, flush);
        complete(flush, peer.endpoint.flush(sendCallback, flush.id));
        while (ops.containsKey(flush.id)) {
            if (System.nanoTime() > deadline) {
                ops.remove(flush.id);
                throw new TransferException("UCX connect to " + peer.name() + ": endpoint did not settle in 10 s");
            }
            worker.progress();
        }
        if (flush.status != UcpStatus.OK) {
            throw new TransferException(
                    "UCX connect to " + peer.name() + ": ucp_ep_flush_nbx failed: " + UcpStatus.describe(flush.status));
        }
        peer.info = peer.endpoint.info();
        return rmaTransport(peer.info);
    }

    static String rmaTransport(String epInfo) {
        for (String line : epInfo.lines().toList()) {
            Matcher m = LANE.matcher(line.replace("#", " ").trim());
            if (m.matches() && line.contains("rma_bw")) {
                return m.group(1);
            }
        }
        return null;
    }

    void closePeer(UcxPeer peer) {
        if (!running) {
            return;
        }
        try {
            call("close peer " + peer.name(), () -> {
                closeEndpoint(peer, false);
                return null;
            });
        } catch (TransferException e) {
            LOG.warn("closing UCX peer {}: {}", peer.name(), e.getMessage());
        }
    }

    private void closeEndpoint(UcxPeer peer, boolean force) {
        if (peer.closed) {
            return;
        }
        peer.closed = true;
        peersById.remove(peer.id);
        for (UcpRemoteKey k : peer.rkeys.values()) {
            k.close();
        }
        peer.rkeys.clear();
        UcxOp close = new UcxOp(nextId++, null, UcxOpKind.CONTROL);
        ops.put(close.id, close);
        complete(close, peer.endpoint.close(force || peer.failed, sendCallback, close.id));
        long deadline = System.nanoTime() + CONTROL_TIMEOUT_NANOS;
        while (ops.containsKey(close.id) && System.nanoTime() < deadline) {
            worker.progress();
        }
        ops.remove(close.id);
    }

    void closeRegion(Registration r) {
        if (!running) {
            return;
        }
        call("deregister region", () -> {
            r.closed = true;
            awaitOpsOn(r);
            if (registered.remove(r.segment.address(), r)) {
                r.memory.close();
            }
            return null;
        });
    }

    /**
     * Before a region is unmapped, lets every operation still reading or writing it finish (a caller may
     * close a region while another thread's request into it is in flight, or right after a request failed
     * part-way): unmapping under UCX would make it copy into freed memory and crash the process. Past the
     * deadline the peers concerned are disconnected by force, which cancels their operations.
     */
    private void awaitOpsOn(Registration r) {
        long deadline = System.nanoTime() + Math.min(settings.requestTimeout().toNanos(), TimeUnit.SECONDS.toNanos(20));
        while (ops.values().stream().anyMatch(op -> op.request != null && op.request.local == r)) {
            if (System.nanoTime() > deadline) {
                List<UcxPeer> peers = ops.values().stream()
                        .filter(op -> op.request != null && op.request.local == r)
                        .map(op -> op.request.peer)
                        .distinct()
                        .toList();
                for (UcxPeer p : peers) {
                    LOG.warn("region closed with operations to {} in flight; disconnecting that peer", p.name());
                    p.failed = true;
                    dropOps(p);
                    closeEndpoint(p, true);
                }
                ops.values().removeIf(op -> op.request != null && op.request.local == r && op.ucxRequest == null);
                return;
            }
            worker.progress();
        }
    }

    // ---------------------------------------------------------------- posting

    private void start(UcxRequest request, Registration local, RegionKey key, List<TransferSpan> spans) {
        UcxPeer peer = request.peer;
        if (local.closed) {
            request.fail(new TransferException("local region at 0x" + Long.toHexString(local.segment.address())
                    + " was closed before the " + request.op + " could start"));
            return;
        }
        if (peer.closed || peer.failed) {
            request.fail(
                    new TransferException("UCX peer " + peer.name() + " is " + (peer.failed ? "failed" : "closed")));
            return;
        }
        request.deadline = request.started + settings.requestTimeout().toNanos();
        request.local = local;
        requests.add(request);
        try {
            UcpRemoteKey rkey = peer.path() == UcxPath.RMA ? peer.rkey(key.packedRkey()) : null;
            long max = settings.maxMessageBytes();
            for (TransferSpan s : spans) {
                for (long done = 0; done < s.length() && !request.future.isDone(); done += max) {
                    long len = Math.min(max, s.length() - done);
                    MemorySegment slice = local.segment.asSlice(s.localOffset() + done, len);
                    long remoteAddress = key.address() + s.remoteOffset() + done;
                    postChunk(request, slice, remoteAddress, rkey);
                }
            }
            if (request.op == TransferOp.WRITE && peer.path() == UcxPath.RMA && !request.future.isDone()) {
                UcxOp flush = new UcxOp(nextId++, request, UcxOpKind.SEND);
                request.pending++;
                ops.put(flush.id, flush);
                complete(flush, peer.endpoint.flush(sendCallback, flush.id));
            }
        } catch (RuntimeException e) {
            request.fail(new TransferException(
                    "UCX " + request.op + " to " + peer.name() + " failed: " + e.getMessage(), e));
        }
        request.posted = true;
        request.maybeFinish();
    }

    private void postChunk(UcxRequest request, MemorySegment slice, long remoteAddress, UcpRemoteKey rkey) {
        UcxPeer peer = request.peer;
        if (peer.path() == UcxPath.RMA) {
            UcxOp op = new UcxOp(nextId++, request, UcxOpKind.SEND);
            request.pending++;
            ops.put(op.id, op);
            MemorySegment st = request.op == TransferOp.WRITE
                    ? peer.endpoint.put(slice, remoteAddress, rkey, sendCallback, op.id)
                    : peer.endpoint.get(slice, remoteAddress, rkey, sendCallback, op.id);
            complete(op, st);
            return;
        }
        // Active messages: the chunk finishes when the peer's reply arrives; its send only has to succeed.
        UcxOp chunk = new UcxOp(nextId++, request, UcxOpKind.AWAIT_REPLY);
        chunk.target = slice;
        chunk.header = header();
        chunk.header.set(JAVA_LONG, 0, chunk.id);
        chunk.header.set(JAVA_LONG, 8, remoteAddress);
        chunk.header.set(JAVA_LONG, 16, slice.byteSize());
        request.pending++;
        ops.put(chunk.id, chunk);
        UcxOp send = new UcxOp(nextId++, request, UcxOpKind.SEND_NO_COUNT);
        send.header = chunk.header;
        chunk.header = null; // owned by the send until it completes
        ops.put(send.id, send);
        MemorySegment st = request.op == TransferOp.WRITE
                ? peer.endpoint.amSend(
                        AM_WRITE,
                        send.header.asSlice(0, REQUEST_HEADER),
                        slice,
                        Ucp.AM_SEND_FLAG_REPLY,
                        sendCallback,
                        send.id)
                : peer.endpoint.amSend(
                        AM_READ,
                        send.header.asSlice(0, REQUEST_HEADER),
                        MemorySegment.NULL.reinterpret(0),
                        Ucp.AM_SEND_FLAG_REPLY,
                        sendCallback,
                        send.id);
        complete(send, st);
    }

    /** Handles a status pointer returned by a post: done now, failed now, or a request to wait for. */
    private void complete(UcxOp op, MemorySegment statusPtr) {
        if (UcpStatus.isRequest(statusPtr)) {
            op.ucxRequest = statusPtr;
            return;
        }
        finish(op, UcpStatus.of(statusPtr), null);
    }

    private void onSendComplete(MemorySegment request, int status, MemorySegment userData) {
        try {
            UcxOp op = ops.get(userData.address());
            if (op != null) {
                finish(op, status, request);
            } else {
                Ucp.requestFree(request);
            }
        } catch (Throwable t) {
            LOG.error("UCX send completion failed", t);
        }
    }

    private void onRecvComplete(MemorySegment request, int status, long length, MemorySegment userData) {
        onSendComplete(request, status, userData);
    }

    private void finish(UcxOp op, int status, MemorySegment ucxRequest) {
        if (ops.remove(op.id) == null) {
            return;
        }
        if (ucxRequest != null) {
            Ucp.requestFree(ucxRequest);
        }
        op.status = status;
        if (op.header != null) {
            headers.push(op.header);
            op.header = null;
        }
        if (op.kind == UcxOpKind.SERVE_RECV) {
            reply(op.replyEndpoint, AM_WRITE_ACK, op.replyTo, status, MemorySegment.NULL.reinterpret(0));
            return;
        }
        UcxRequest r = op.request;
        if (r == null) {
            return;
        }
        if (status != UcpStatus.OK) {
            failPeerRequests(
                    r,
                    "UCX " + r.op + " with " + r.peer.name() + " failed: " + UcpStatus.describe(status) + " (" + status
                            + ")");
            return;
        }
        if (op.kind != UcxOpKind.SEND_NO_COUNT) {
            r.pending--;
            r.maybeFinish();
        }
    }

    private void failPeerRequests(UcxRequest r, String message) {
        r.fail(new TransferException(message));
    }

    private void expireRequests(long now) {
        for (Iterator<UcxRequest> it = requests.iterator(); it.hasNext(); ) {
            UcxRequest r = it.next();
            if (r.future.isDone()) {
                it.remove();
            } else if (now > r.deadline) {
                it.remove();
                r.fail(new TransferException(
                        "UCX " + r.op + " of " + r.bytes + " bytes with " + r.peer.name() + " timed out after "
                                + Duration.ofNanos(now - r.started).toMillis() + " ms; disconnecting"));
                r.peer.failed = true;
                dropOps(r.peer);
                closeEndpoint(r.peer, true);
            } else {
                break; // deadlines grow in posting order
            }
        }
    }

    private void onEndpointError(MemorySegment arg, MemorySegment ep, int status) {
        try {
            UcxPeer peer = peersById.get(arg.address());
            if (peer == null) {
                return;
            }
            peer.failed = true;
            String why =
                    "UCX endpoint to " + peer.name() + " failed: " + UcpStatus.describe(status) + " (" + status + ")";
            LOG.warn(why);
            for (UcxRequest r : requests) {
                if (r.peer == peer) {
                    r.fail(new TransferException(why));
                }
            }
            dropOps(peer);
            // Closing from inside the callback is not allowed; the next command turn does it.
            commands.add(() -> closeEndpoint(peer, true));
        } catch (Throwable t) {
            LOG.error("UCX error handler failed", t);
        }
    }

    private void dropOps(UcxPeer peer) {
        ops.values()
                .removeIf(op -> op.request != null
                        && op.request.peer == peer
                        && op.ucxRequest == null
                        && op.kind == UcxOpKind.AWAIT_REPLY);
    }

    // ---------------------------------------------------------------- serving peers (active messages)

    private int onWrite(
            MemorySegment arg,
            MemorySegment header,
            long headerLength,
            MemorySegment data,
            long length,
            MemorySegment param) {
        try {
            MemorySegment h = header.reinterpret(headerLength);
            long opId = h.get(JAVA_LONG_UNALIGNED, 0);
            long address = h.get(JAVA_LONG_UNALIGNED, 8);
            long declared = h.get(JAVA_LONG_UNALIGNED, 16);
            MemorySegment p = param.reinterpret(16);
            long attr = p.get(JAVA_LONG, 0);
            MemorySegment replyEp = (attr & Ucp.AM_RECV_ATTR_REPLY_EP) != 0 ? p.get(ADDRESS, 8) : MemorySegment.NULL;
            MemorySegment target = resolve(address, length);
            if (target == null || declared != length) {
                if ((attr & Ucp.AM_RECV_ATTR_FLAG_RNDV) != 0) {
                    worker.amDataRelease(data);
                }
                LOG.warn(
                        "refused a WRITE of {} bytes to 0x{}: not inside memory registered here",
                        length,
                        Long.toHexString(address));
                reply(replyEp, AM_WRITE_ACK, opId, UcpStatus.ERR_INVALID_ADDR, MemorySegment.NULL.reinterpret(0));
                return UcpStatus.OK;
            }
            if ((attr & Ucp.AM_RECV_ATTR_FLAG_RNDV) != 0) {
                UcxOp recv = new UcxOp(nextId++, null, UcxOpKind.SERVE_RECV);
                recv.replyEndpoint = replyEp;
                recv.replyTo = opId;
                ops.put(recv.id, recv);
                complete(recv, worker.amRecvData(data, target, recvCallback, recv.id));
            } else {
                MemorySegment.copy(data.reinterpret(length), 0, target, 0, length);
                reply(replyEp, AM_WRITE_ACK, opId, UcpStatus.OK, MemorySegment.NULL.reinterpret(0));
            }
        } catch (Throwable t) {
            LOG.error("UCX WRITE handler failed", t);
        }
        return UcpStatus.OK;
    }

    private int onRead(
            MemorySegment arg,
            MemorySegment header,
            long headerLength,
            MemorySegment data,
            long length,
            MemorySegment param) {
        try {
            MemorySegment h = header.reinterpret(headerLength);
            long opId = h.get(JAVA_LONG_UNALIGNED, 0);
            long address = h.get(JAVA_LONG_UNALIGNED, 8);
            long wanted = h.get(JAVA_LONG_UNALIGNED, 16);
            MemorySegment p = param.reinterpret(16);
            MemorySegment replyEp =
                    (p.get(JAVA_LONG, 0) & Ucp.AM_RECV_ATTR_REPLY_EP) != 0 ? p.get(ADDRESS, 8) : MemorySegment.NULL;
            MemorySegment source = resolve(address, wanted);
            if (source == null) {
                LOG.warn(
                        "refused a READ of {} bytes at 0x{}: not inside memory registered here",
                        wanted,
                        Long.toHexString(address));
                reply(replyEp, AM_READ_REPLY, opId, UcpStatus.ERR_INVALID_ADDR, MemorySegment.NULL.reinterpret(0));
            } else {
                reply(replyEp, AM_READ_REPLY, opId, UcpStatus.OK, source);
            }
        } catch (Throwable t) {
            LOG.error("UCX READ handler failed", t);
        }
        return UcpStatus.OK;
    }

    /** A WRITE_ACK or READ_REPLY arrived for one of our chunks. */
    private int onReply(
            MemorySegment arg,
            MemorySegment header,
            long headerLength,
            MemorySegment data,
            long length,
            MemorySegment param) {
        try {
            MemorySegment h = header.reinterpret(headerLength);
            long opId = h.get(JAVA_LONG_UNALIGNED, 0);
            int status = h.get(JAVA_INT_UNALIGNED, 8);
            long attr = param.reinterpret(16).get(JAVA_LONG, 0);
            boolean rndv = (attr & Ucp.AM_RECV_ATTR_FLAG_RNDV) != 0;
            UcxOp chunk = ops.get(opId);
            if (chunk == null || chunk.kind != UcxOpKind.AWAIT_REPLY) {
                if (rndv) {
                    worker.amDataRelease(data);
                }
                return UcpStatus.OK; // the request already failed or timed out
            }
            if (status != UcpStatus.OK) {
                if (rndv) {
                    worker.amDataRelease(data);
                }
                ops.remove(opId);
                failPeerRequests(
                        chunk.request,
                        "UCX " + chunk.request.op + " with " + chunk.request.peer.name() + " refused by the peer: "
                                + UcpStatus.describe(status) + " (address outside its registered memory)");
                return UcpStatus.OK;
            }
            if (chunk.request.op == TransferOp.WRITE) {
                finish(chunk, UcpStatus.OK, null);
            } else if (length != chunk.target.byteSize()) {
                if (rndv) {
                    worker.amDataRelease(data);
                }
                ops.remove(opId);
                failPeerRequests(
                        chunk.request,
                        "UCX READ from " + chunk.request.peer.name() + " answered " + length + " bytes, expected "
                                + chunk.target.byteSize());
            } else if (rndv) {
                // Receive straight into the caller's memory; the chunk finishes with the receive.
                chunk.kind = UcxOpKind.SEND;
                complete(chunk, worker.amRecvData(data, chunk.target, recvCallback, chunk.id));
            } else {
                MemorySegment.copy(data.reinterpret(length), 0, chunk.target, 0, length);
                finish(chunk, UcpStatus.OK, null);
            }
        } catch (Throwable t) {
            LOG.error("UCX reply handler failed", t);
        }
        return UcpStatus.OK;
    }

    private void reply(MemorySegment replyEp, int id, long opId, int status, MemorySegment data) {
        if (replyEp.address() == 0) {
            LOG.warn("UCX message without reply endpoint; cannot answer op {}", opId);
            return;
        }
        UcxOp send = new UcxOp(nextId++, null, UcxOpKind.SERVE_SEND);
        send.header = header();
        send.header.set(JAVA_LONG, 0, opId);
        send.header.set(JAVA_INT, 8, status);
        ops.put(send.id, send);
        complete(
                send,
                worker.borrow(replyEp)
                        .amSend(id, send.header.asSlice(0, REPLY_HEADER), data, 0, sendCallback, send.id));
    }

    /** The registered memory covering [address, address + length), or null. */
    private MemorySegment resolve(long address, long length) {
        Map.Entry<Long, Registration> e = registered.floorEntry(address);
        if (e == null || length < 0) {
            return null;
        }
        MemorySegment seg = e.getValue().segment;
        long offset = address - seg.address();
        if (offset + length > seg.byteSize()) {
            return null;
        }
        return seg.asSlice(offset, length);
    }

    private MemorySegment header() {
        MemorySegment h = headers.poll();
        if (h != null) {
            return h;
        }
        MemorySegment block = callbacks.allocate(32L * 256, 64);
        for (int i = 1; i < 256; i++) {
            headers.push(block.asSlice(32L * i, 32));
        }
        return block.asSlice(0, 32);
    }

    // ---------------------------------------------------------------- state

    /** A region registered with this engine. */
    final class Registration implements LocalRegion {
        final UcpMemory memory;
        final MemorySegment segment;
        private final byte[] key;
        /** Set on the progress thread when the region starts closing; no new request may use it. */
        boolean closed;

        Registration(UcpMemory memory, MemorySegment segment) {
            this.memory = memory;
            this.segment = segment;
            this.key = new RegionKey(segment.address(), segment.byteSize(), memory.packedRkey()).encode();
        }

        UcxTransferEngine engine() {
            return UcxTransferEngine.this;
        }

        @Override
        public MemorySegment segment() {
            return segment;
        }

        @Override
        public MemoryKind kind() {
            return MemoryKind.DRAM;
        }

        @Override
        public byte[] remoteKey() {
            return key.clone();
        }

        @Override
        public void close() {
            closeRegion(this);
        }
    }
}
