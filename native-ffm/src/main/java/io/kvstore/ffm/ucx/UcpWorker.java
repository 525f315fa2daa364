package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A UCP worker: the progress engine that endpoints and requests run on. Created in
 * UCS_THREAD_MODE_MULTI, so requests may be posted from any thread while a progress thread (see
 * {@link #startProgressThread}) or the waiting caller drives completion.
 */
public final class UcpWorker implements AutoCloseable {

    private final UcpContext context;
    private final Ucp ucp;
    private final MemorySegment handle;
    private final byte[] address;
    private volatile Thread progressThread;
    private volatile boolean closing;

    UcpWorker(UcpContext context) {
        this.context = context;
        this.ucp = context.ucp();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(Ucp.WORKER_PARAMS);
            params.set(JAVA_LONG, 0, Ucp.WORKER_PARAM_FIELD_THREAD_MODE);
            params.set(JAVA_INT, 8, Ucp.THREAD_MODE_MULTI);
            MemorySegment out = arena.allocate(ADDRESS);
            Ucp.check("ucp_worker_create", (int) ucp.workerCreate.invokeExact(context.handle(), params, out));
            handle = out.get(ADDRESS, 0);
            MemorySegment addressOut = arena.allocate(ADDRESS);
            MemorySegment lengthOut = arena.allocate(JAVA_LONG);
            Ucp.check("ucp_worker_get_address", (int) ucp.workerGetAddress.invokeExact(handle, addressOut, lengthOut));
            MemorySegment raw = addressOut.get(ADDRESS, 0).reinterpret(lengthOut.get(JAVA_LONG, 0));
            address = raw.toArray(JAVA_BYTE);
            ucp.workerReleaseAddress.invokeExact(handle, raw);
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_worker_create", t);
        }
    }

    /** This worker's address, for a peer to connect an endpoint to. */
    public byte[] address() {
        return address.clone();
    }

    MemorySegment handle() {
        return handle;
    }

    Ucp ucp() {
        return ucp;
    }

    /**
     * Connects to the worker whose address a peer published.
     *
     * <p>UCX 1.13's shared-memory transports do not support peer-failure handling, so asking for it
     * ({@code peerErrorHandling}) makes UCX fall back to TCP even between processes of one host. Without
     * it a dead peer still fails requests: every wait has a deadline.
     */
    public UcpEndpoint connect(byte[] peerAddress, boolean peerErrorHandling) {
        return new UcpEndpoint(this, peerAddress, peerErrorHandling);
    }

    /** Connects with UCX peer-failure handling (portable; TCP between processes of one host in UCX 1.13). */
    public UcpEndpoint connect(byte[] peerAddress) {
        return connect(peerAddress, true);
    }

    /** Progresses communication once; returns the number of events handled. */
    public int progress() {
        try {
            return (int) ucp.workerProgress.invokeExact(handle);
        } catch (Throwable t) {
            throw Ucp.rethrow("ucp_worker_progress", t);
        }
    }

    /**
     * Starts a daemon thread that progresses this worker until it closes. It spins for a millisecond after
     * the last event (transfers that need the target's progress run at full speed), then backs off to
     * parking up to a millisecond at a time (an idle worker costs almost no CPU).
     */
    public synchronized void startProgressThread(String name) {
        if (progressThread != null) {
            return;
        }
        progressThread = Thread.ofPlatform().name(name).daemon().start(() -> {
            long lastEvent = System.nanoTime();
            while (!closing) {
                if (progress() > 0) {
                    lastEvent = System.nanoTime();
                    continue;
                }
                long idle = System.nanoTime() - lastEvent;
                if (idle < 1_000_000) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(Math.min(1_000_000, idle / 16));
                }
            }
        });
    }

    /**
     * Waits for a posted request, progressing the worker (unless a progress thread does), then frees it.
     *
     * @throws UcxException naming {@code call} on failure, or on time-out (after cancelling the request)
     */
    public void await(UcpRequest request, Duration timeout) {
        String call = request.call();
        MemorySegment statusPtr = request.statusPtr();
        int status = Ucp.statusOf(statusPtr);
        if (status != Ucp.IN_PROGRESS) {
            Ucp.check(call, status);
            return;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            while (true) {
                status = (int) ucp.requestCheckStatus.invokeExact(statusPtr);
                if (status != Ucp.IN_PROGRESS) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    ucp.requestCancel.invokeExact(handle, statusPtr);
                    long cancelDeadline = System.nanoTime() + 1_000_000_000L;
                    while ((int) ucp.requestCheckStatus.invokeExact(statusPtr) == Ucp.IN_PROGRESS
                            && System.nanoTime() < cancelDeadline) {
                        progress();
                    }
                    // A request UCX cannot cancel (its peer is gone) is left to UCX rather than freed under it.
                    if ((int) ucp.requestCheckStatus.invokeExact(statusPtr) != Ucp.IN_PROGRESS) {
                        ucp.requestFree.invokeExact(statusPtr);
                    }
                    throw new UcxException(call + " timed out after " + timeout.toMillis() + " ms", 0);
                }
                if (progressThread == null) {
                    progress();
                } else {
                    LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(5));
                }
            }
            ucp.requestFree.invokeExact(statusPtr);
        } catch (Throwable t) {
            throw Ucp.rethrow(call, t);
        }
        Ucp.check(call, status);
    }

    @Override
    public void close() {
        closing = true;
        Thread t = progressThread;
        if (t != null) {
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            ucp.workerDestroy.invokeExact(handle);
        } catch (Throwable e) {
            throw Ucp.rethrow("ucp_worker_destroy", e);
        }
    }
}
