package io.kvstore.service.events;

import java.nio.ByteBuffer;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * The publisher's two ZMQ sockets, as vLLM's {@code ZmqEventPublisher} has them: a PUB socket sending
 * {@code [topic, seq (8 bytes big-endian), payload]}, and an optional ROUTER socket that answers a request
 * {@code [identity, "", start seq (8 bytes big-endian)]} with every held batch from that sequence number on,
 * each {@code [identity, "", topic, seq, payload]}, then {@code [identity, "", "", -1, ""]}. ZMQ sockets are
 * not thread-safe: only the publisher thread touches these after construction.
 */
final class EventSockets implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EventSockets.class);
    private static final byte[] EMPTY = new byte[0];
    private static final byte[] END_SEQ = seqBytes(-1);
    /** How long an outgoing connection may take to finish its handshake before JeroMQ redials. */
    static final int CONNECT_HANDSHAKE_MILLIS = 1000;

    private final ZContext context = new ZContext(1);
    private final ZMQ.Socket pub;
    private final ZMQ.Socket replay;
    private final String pubEndpoint;
    private final String replayEndpoint;
    private long badRequests;

    /**
     * @param replaySize batches a replay answers at most: the ROUTER queues a whole answer (a ROUTER drops what
     *     is past its high-water mark, which would cut an answer short without a sign)
     */
    EventSockets(String endpoint, String replayEndpoint, int hwm, int replaySize) {
        try {
            pub = context.createSocket(SocketType.PUB);
            pub.setSndHWM(hwm);
            pub.setLinger(0);
            if (bindsTo(endpoint)) {
                pub.bind(endpoint);
            } else {
                // JeroMQ 0.6.0 sometimes leaves a fresh outgoing connection without its ZMTP handshake (jeromq
                // PR #1022: 1-6% of connects): the handshake timer, 30 s by default, is what redials it
                pub.setHandshakeIvl(CONNECT_HANDSHAKE_MILLIS);
                pub.connect(endpoint);
            }
            this.pubEndpoint = pub.getLastEndpoint() != null ? pub.getLastEndpoint() : endpoint;
            if (replayEndpoint.isBlank()) {
                replay = null;
                this.replayEndpoint = "";
            } else {
                replay = context.createSocket(SocketType.ROUTER);
                replay.setLinger(0);
                replay.setSndHWM(Math.max(Math.max(hwm, 1000), replaySize + 1));
                replay.bind(replayEndpoint);
                this.replayEndpoint = replay.getLastEndpoint();
            }
        } catch (RuntimeException e) {
            context.close();
            throw new IllegalStateException(
                    "kvstore.events: cannot open " + endpoint + " / " + replayEndpoint + ": " + e.getMessage(), e);
        }
    }

    /** vLLM's rule: bind a wildcard, IPv6 any or local transport address, connect to anything else. */
    static boolean bindsTo(String endpoint) {
        return endpoint.contains("*")
                || endpoint.contains("::")
                || endpoint.startsWith("ipc://")
                || endpoint.startsWith("inproc://");
    }

    String pubEndpoint() {
        return pubEndpoint;
    }

    String replayEndpoint() {
        return replayEndpoint;
    }

    /** Sends one batch; never blocks: a subscriber whose queue is at the high-water mark misses it. */
    void publish(byte[] topic, long seq, byte[] payload) {
        pub.send(topic, ZMQ.SNDMORE | ZMQ.DONTWAIT);
        pub.send(seqBytes(seq), ZMQ.SNDMORE | ZMQ.DONTWAIT);
        pub.send(payload, ZMQ.DONTWAIT);
    }

    /**
     * Waits up to {@code timeoutMillis} for replay requests and answers those that came from {@code ring};
     * returns how many were answered. Without a replay socket it just sleeps.
     */
    int awaitReplay(long timeoutMillis, ReplayRing ring) throws InterruptedException {
        if (replay == null) {
            Thread.sleep(timeoutMillis);
            return 0;
        }
        // the wait is a receive with a timeout on the ROUTER itself (no poller), then whatever else is queued
        replay.setReceiveTimeOut((int) timeoutMillis);
        int answered = 0;
        byte[] first = replay.recv(0);
        for (; first != null; first = replay.recv(ZMQ.DONTWAIT)) {
            List<byte[]> frames = new java.util.ArrayList<>(3);
            frames.add(first);
            while (replay.hasReceiveMore()) {
                frames.add(replay.recv());
            }
            if (frames.size() != 3 || frames.get(2).length != 8) {
                if (badRequests++ % 1000 == 0) {
                    log.warn(
                            "kvstore.events: ignored a replay request of {} frames (expected identity, \"\", 8-byte seq)",
                            frames.size());
                }
                continue;
            }
            byte[] identity = frames.get(0);
            long start = ByteBuffer.wrap(frames.get(2)).getLong();
            for (ReplayRing.Published p : ring.from(start)) {
                replay.send(identity, ZMQ.SNDMORE);
                replay.send(EMPTY, ZMQ.SNDMORE);
                replay.send(p.topic(), ZMQ.SNDMORE);
                replay.send(seqBytes(p.seq()), ZMQ.SNDMORE);
                replay.send(p.payload(), 0);
            }
            replay.send(identity, ZMQ.SNDMORE);
            replay.send(EMPTY, ZMQ.SNDMORE);
            replay.send(EMPTY, ZMQ.SNDMORE);
            replay.send(END_SEQ, ZMQ.SNDMORE);
            replay.send(EMPTY, 0);
            answered++;
        }
        return answered;
    }

    static byte[] seqBytes(long seq) {
        return ByteBuffer.allocate(8).putLong(seq).array();
    }

    @Override
    public void close() {
        context.close();
    }
}
