package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.RemoteKey;
import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.ffm.ucx.UcpContext;
import io.kvstore.ffm.ucx.UcpEndpoint;
import io.kvstore.ffm.ucx.UcpMemory;
import io.kvstore.ffm.ucx.UcpRequest;
import io.kvstore.ffm.ucx.UcpWorker;
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
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * {@link TransferEngine} on UCX directly (libucp), the fallback when NIXL is absent, like TensorRT-LLM's
 * UCX option. One context and worker per engine with its own progress thread; requests are posted from
 * a small pool so callers never block, up to eight of a transfer in flight at once, and every request
 * has a deadline so a dead peer fails it.
 *
 * <p>Transfers use UCX one-sided put/get whatever the transport; UCX picks shared memory between
 * processes of one host and TCP or RDMA across hosts (UCX_TLS selects). Over TCP, UCX 1.13 emulates
 * RMA in software; docs/benchmarks.md has the figures.
 */
public final class UcxTransferEngine implements TransferEngine {

    private final UcpContext context;
    private final UcpWorker worker;
    private final ExecutorService posting;
    private final Duration timeout;
    /** Requests kept in flight per transfer: enough to cover a request's latency with the next ones. */
    private static final int WINDOW = 8;

    public UcxTransferEngine(Duration timeout) {
        if (!Ucp.availability().available()) {
            throw new IllegalStateException("UCX transfer engine unavailable: " + Ucp.availability().detail());
        }
        this.timeout = timeout;
        this.context = new UcpContext(Ucp.FEATURE_RMA);
        this.worker = context.newWorker();
        worker.startProgressThread("kvstore-ucx-progress");
        this.posting = Executors.newFixedThreadPool(2, Thread.ofPlatform().name("kvstore-ucx-post-", 0).daemon().factory());
    }

    @Override
    public String backend() {
        return "UCX";
    }

    @Override
    public byte[] localAddress() {
        return worker.address();
    }

    @Override
    public LocalRegion register(MemorySegment segment, MemoryKind kind) {
        if (kind != MemoryKind.DRAM) {
            throw new IllegalArgumentException("the UCX engine registers host memory only, not " + kind);
        }
        UcpMemory memory = context.map(segment);
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
                return memory.packedKey();
            }

            @Override
            public void close() {
                memory.close();
            }
        };
    }

    @Override
    public Peer connect(String name, byte[] peerAddress) {
        UcpEndpoint endpoint = worker.connect(peerAddress);
        return new UcxPeer(name, endpoint);
    }

    /** A connected peer: its endpoint. */
    private record UcxPeer(String name, UcpEndpoint endpoint) implements Peer {
        @Override
        public void close() {
            endpoint.close();
        }
    }

    @Override
    public CompletableFuture<TransferResult> post(TransferOp op, LocalRegion local, Peer peer, RemoteRegion remote,
            List<TransferSpan> spans) {
        if (!(peer instanceof UcxPeer ucxPeer)) {
            throw new IllegalArgumentException("peer " + peer.name() + " was not connected by this engine");
        }
        List<TransferSpan> merged = TransferSpan.coalesce(spans);
        for (TransferSpan s : merged) {
            if (s.localOffset() + s.length() > local.segment().byteSize() || s.remoteOffset() + s.length() > remote.length()) {
                throw new IllegalArgumentException("span " + s + " lies outside the local region ("
                        + local.segment().byteSize() + " bytes) or the remote one (" + remote.length() + " bytes)");
            }
        }
        return CompletableFuture.supplyAsync(() -> {
            long start = System.nanoTime();
            long bytes = 0;
            try (RemoteKey key = ucxPeer.endpoint().unpack(remote.remoteKey())) {
                ArrayDeque<UcpRequest> inFlight = new ArrayDeque<>();
                try {
                    for (TransferSpan s : merged) {
                        MemorySegment buffer = local.segment().asSlice(s.localOffset(), s.length());
                        long remoteAddress = remote.address() + s.remoteOffset();
                        if (inFlight.size() == WINDOW) {
                            worker.await(inFlight.poll(), timeout);
                        }
                        inFlight.add(op == TransferOp.WRITE
                                ? ucxPeer.endpoint().putAsync(buffer, remoteAddress, key)
                                : ucxPeer.endpoint().getAsync(buffer, remoteAddress, key));
                        bytes += s.length();
                    }
                    while (!inFlight.isEmpty()) {
                        worker.await(inFlight.poll(), timeout);
                    }
                } finally {
                    // after a failure, still reap what was posted so no request or buffer is left in UCX's hands
                    while (!inFlight.isEmpty()) {
                        try {
                            worker.await(inFlight.poll(), timeout);
                        } catch (UcxException ignored) {
                            // the first failure is the one reported
                        }
                    }
                }
                if (op == TransferOp.WRITE) {
                    ucxPeer.endpoint().flush(timeout);
                }
            } catch (UcxException e) {
                throw new TransferException("UCX " + op + " with peer " + peer.name() + " failed: " + e.getMessage(), e);
            }
            return new TransferResult(bytes, merged.size(), Duration.ofNanos(System.nanoTime() - start));
        }, posting);
    }

    @Override
    public void close() {
        posting.shutdown();
        worker.close();
        context.close();
    }
}
