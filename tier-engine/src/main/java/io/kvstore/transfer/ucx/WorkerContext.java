package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.ffm.ucx.UcpContext;
import io.kvstore.ffm.ucx.UcpWorker;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.Map;

/**
 * The UCX resources of one engine: its UCP context (RMA, active messages, wake-up), its single-thread
 * worker, the upcall stubs every post names as its completion callback, and a pool of message headers.
 * Everything here is created and used on the progress thread, except {@link #signal()}.
 *
 * <p>Headers are pooled because UCX 1.13 reads an active message's header until the send completes,
 * so each message in flight needs its own, and allocating one per message would churn an arena.
 */
final class WorkerContext implements AutoCloseable {

    private static final long HEADER_BYTES = 32;
    private static final int HEADERS_PER_BLOCK = 256;

    private final Arena callbacks = Arena.ofShared();
    private final UcpContext context;
    private final UcpWorker worker;
    private final byte[] address;
    private final ArrayDeque<MemorySegment> headers = new ArrayDeque<>();
    private MemorySegment sendCallback = MemorySegment.NULL;
    private MemorySegment recvCallback = MemorySegment.NULL;
    private MemorySegment errorCallback = MemorySegment.NULL;

    private WorkerContext(UcpContext context, UcpWorker worker) {
        this.context = context;
        this.worker = worker;
        this.address = worker.address();
    }

    /** {@code ucp_init} with {@code ucxConfig} on top of the environment, then a single-thread worker. */
    static WorkerContext open(Map<String, String> ucxConfig) {
        UcpContext context = UcpContext.create(Ucp.FEATURE_RMA | Ucp.FEATURE_AM | Ucp.FEATURE_WAKEUP, ucxConfig);
        try {
            return new WorkerContext(context, UcpWorker.create(context));
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    /** Installs the completion callbacks every operation reports to, and the endpoint error handler. */
    void onCompletion(Ucp.SendCallback send, Ucp.RecvDataCallback recv, Ucp.ErrorHandler error) {
        sendCallback = Ucp.sendCallback(send, callbacks);
        recvCallback = Ucp.recvDataCallback(recv, callbacks);
        errorCallback = Ucp.errorHandler(error, callbacks);
    }

    /** Routes active message {@code id} to {@code handler}. */
    void onMessage(int id, Ucp.AmHandler handler) {
        worker.setAmHandler(id, Ucp.amHandler(handler, callbacks), MemorySegment.NULL);
    }

    UcpContext context() {
        return context;
    }

    UcpWorker worker() {
        return worker;
    }

    /** The worker address peers connect to. */
    byte[] address() {
        return address.clone();
    }

    MemorySegment sendCallback() {
        return sendCallback;
    }

    MemorySegment recvCallback() {
        return recvCallback;
    }

    MemorySegment errorCallback() {
        return errorCallback;
    }

    /** Drops a received message's data the handler will not fetch: a rendezvous descriptor must be released. */
    void dropUnreceived(AmHeader.Params params, MemorySegment data) {
        if (params.rendezvous()) {
            worker.amDataRelease(data);
        }
    }

    void signal() {
        worker.signal();
    }

    /** A 32-byte header for a message in flight; give it back with {@link #recycle} when the send completed. */
    MemorySegment header() {
        MemorySegment h = headers.poll();
        if (h != null) {
            return h;
        }
        MemorySegment block = callbacks.allocate(HEADER_BYTES * HEADERS_PER_BLOCK, 64);
        for (int i = 1; i < HEADERS_PER_BLOCK; i++) {
            headers.push(block.asSlice(HEADER_BYTES * i, HEADER_BYTES));
        }
        return block.asSlice(0, HEADER_BYTES);
    }

    void recycle(MemorySegment header) {
        headers.push(header);
    }

    /** Destroys the worker, then the context, then the callback stubs (no upcall can arrive after that). */
    @Override
    public void close() {
        try {
            worker.close();
            context.close();
        } finally {
            callbacks.close();
        }
    }
}
