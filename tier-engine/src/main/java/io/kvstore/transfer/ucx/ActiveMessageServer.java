package io.kvstore.transfer.ucx;

import io.kvstore.ffm.ucx.UcpStatus;
import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves peers that reach this engine by active messages ({@link UcxPath#ACTIVE_MESSAGES}): a
 * {@link AmHeader#WRITE} is written into registered memory and acknowledged, a {@link AmHeader#READ}
 * is answered with the bytes. Every address is checked against the {@link RegionTable} first: a range
 * not wholly inside memory registered here is refused with {@code UCS_ERR_INVALID_ADDR}, never
 * touched. Runs in UCX callbacks on the progress thread.
 */
final class ActiveMessageServer {

    private static final Logger LOG = LoggerFactory.getLogger(ActiveMessageServer.class);
    private static final MemorySegment NO_DATA = MemorySegment.NULL.reinterpret(0);

    private final WorkerContext worker;
    private final OperationTable ops;
    private final RegionTable regions;

    ActiveMessageServer(WorkerContext worker, OperationTable ops, RegionTable regions) {
        this.worker = worker;
        this.ops = ops;
        this.regions = regions;
    }

    /** Registers the WRITE and READ handlers with the worker. */
    void install() {
        worker.onMessage(AmHeader.WRITE, this::onWrite);
        worker.onMessage(AmHeader.READ, this::onRead);
    }

    private int onWrite(
            MemorySegment arg,
            MemorySegment header,
            long headerLength,
            MemorySegment data,
            long length,
            MemorySegment param) {
        try {
            AmHeader.Params params = AmHeader.params(param);
            AmHeader.Request request = AmHeader.request(header, headerLength);
            if (request == null) {
                worker.dropUnreceived(params, data);
                LOG.warn("dropped a WRITE with a {}-byte header: not a kvstore message", headerLength);
                return UcpStatus.OK;
            }
            UcxRegion region = regions.find(request.address(), length);
            if (region == null || request.length() != length) {
                worker.dropUnreceived(params, data);
                LOG.warn(
                        "refused a WRITE of {} bytes to 0x{}: not inside memory registered here",
                        length,
                        Long.toHexString(request.address()));
                reply(params, AmHeader.WRITE_ACK, request.opId(), UcpStatus.ERR_INVALID_ADDR, NO_DATA, null);
                return UcpStatus.OK;
            }
            MemorySegment target = region.slice(request.address(), length);
            if (params.rendezvous()) {
                UcxOp recv = ops.add(null, UcxOpKind.SERVE_RECV);
                recv.serving = region; // the region's close waits for the data to land
                recv.whenServed = status -> reply(params, AmHeader.WRITE_ACK, request.opId(), status, NO_DATA, null);
                ops.complete(recv, worker.worker().amRecvData(data, target, worker.recvCallback(), recv.id));
            } else {
                MemorySegment.copy(data.reinterpret(length), 0, target, 0, length);
                reply(params, AmHeader.WRITE_ACK, request.opId(), UcpStatus.OK, NO_DATA, null);
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
            AmHeader.Params params = AmHeader.params(param);
            AmHeader.Request request = AmHeader.request(header, headerLength);
            if (request == null) {
                LOG.warn("dropped a READ with a {}-byte header: not a kvstore message", headerLength);
                return UcpStatus.OK;
            }
            UcxRegion region = regions.find(request.address(), request.length());
            if (region == null) {
                LOG.warn(
                        "refused a READ of {} bytes at 0x{}: not inside memory registered here",
                        request.length(),
                        Long.toHexString(request.address()));
                reply(params, AmHeader.READ_REPLY, request.opId(), UcpStatus.ERR_INVALID_ADDR, NO_DATA, null);
            } else {
                MemorySegment source = region.slice(request.address(), request.length());
                // the reply is sent from the region itself: its close waits until UCX is done reading it
                reply(params, AmHeader.READ_REPLY, request.opId(), UcpStatus.OK, source, region);
            }
        } catch (Throwable t) {
            LOG.error("UCX READ handler failed", t);
        }
        return UcpStatus.OK;
    }

    /**
     * Answers operation {@code opId} of the peer on the message's reply endpoint; {@code region} is the
     * registered region {@code data} lies in, if any.
     */
    private void reply(AmHeader.Params params, int id, long opId, int status, MemorySegment data, UcxRegion region) {
        if (!params.canReply()) {
            LOG.warn("UCX message without reply endpoint; cannot answer op {}", opId);
            return;
        }
        UcxOp send = ops.add(null, UcxOpKind.SERVE_SEND);
        send.serving = region;
        send.header = worker.header();
        MemorySegment header = AmHeader.write(new AmHeader.Reply(opId, status), send.header);
        ops.complete(
                send,
                worker.worker()
                        .borrow(params.replyEndpoint())
                        .amSend(id, header, data, 0, worker.sendCallback(), send.id));
    }
}
