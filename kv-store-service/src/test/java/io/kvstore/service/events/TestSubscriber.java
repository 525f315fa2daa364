package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A Java subscriber on real loopback sockets: a SUB socket read by its own thread, and replay requests on
 * a DEALER socket as vLLM's example subscriber makes them.
 */
public final class TestSubscriber implements AutoCloseable {

    private final ZContext context = new ZContext(1);
    private final List<DecodedBatch> live = new CopyOnWriteArrayList<>();
    private final List<Throwable> errors = new CopyOnWriteArrayList<>();
    private final String replayEndpoint;
    private final Thread reader;
    private volatile boolean running = true;

    public TestSubscriber(String endpoint, String replayEndpoint) {
        this.replayEndpoint = replayEndpoint;
        ZMQ.Socket sub = context.createSocket(SocketType.SUB);
        sub.setHandshakeIvl(EventSockets.CONNECT_HANDSHAKE_MILLIS); // redial a stalled JeroMQ connect in 1 s
        sub.connect(endpoint);
        sub.subscribe(new byte[0]);
        sub.setReceiveTimeOut(100);
        reader = Thread.ofPlatform().name("test-subscriber").start(() -> {
            while (running) {
                try {
                    byte[] topic = sub.recv();
                    if (topic == null) {
                        continue;
                    }
                    long seq = ByteBuffer.wrap(sub.recv()).getLong();
                    byte[] payload = sub.recv();
                    live.add(DecodedBatch.decode(new String(topic, StandardCharsets.UTF_8), seq, payload));
                } catch (Throwable t) {
                    if (running) {
                        errors.add(t);
                    }
                    return;
                }
            }
        });
    }

    /** Batches received live so far. */
    List<DecodedBatch> live() {
        assertThat(errors).isEmpty();
        return List.copyOf(live);
    }

    /**
     * Stores probe blocks (namespace {@code probe}) until one reaches this subscriber: a SUB socket misses
     * what is published before its subscription reaches the publisher.
     */
    void awaitConnected(EventedEngine e, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (int i = 0; live.isEmpty(); i++) {
            assertThat(errors).isEmpty();
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no probe event reached the subscriber within " + timeout);
            }
            e.store("probe", i);
            Thread.sleep(50);
        }
    }

    /** Waits until a batch with sequence number {@code seq} arrived live. */
    void awaitSeq(long seq, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (live.isEmpty() || live.getLast().seq() < seq) {
            assertThat(errors).isEmpty();
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no batch " + seq + " within " + timeout + "; last "
                        + (live.isEmpty() ? "none" : live.getLast().seq()));
            }
            Thread.sleep(5);
        }
    }

    /**
     * Asks the replay socket for every batch from {@code startSeq} on; the answer ends at seq -1. A request
     * unanswered for 15 s is sent again on a new socket (a client's usual retry), at most three times.
     */
    public List<DecodedBatch> replay(long startSeq) throws Exception {
        for (int attempt = 1; ; attempt++) {
            List<DecodedBatch> answer = replayOnce(startSeq);
            if (answer != null) {
                return answer;
            }
            System.out.println("replay request from " + startSeq + " unanswered in 15 s, attempt " + attempt);
            assertThat(attempt).as("replay answered within three requests").isLessThan(3);
        }
    }

    private List<DecodedBatch> replayOnce(long startSeq) throws Exception {
        try (ZMQ.Socket dealer = context.createSocket(SocketType.DEALER)) {
            dealer.setReceiveTimeOut(15_000);
            dealer.setLinger(0);
            dealer.setHandshakeIvl(EventSockets.CONNECT_HANDSHAKE_MILLIS); // the request waits in the pipe
            dealer.connect(replayEndpoint);
            dealer.send(new byte[0], ZMQ.SNDMORE);
            dealer.send(ByteBuffer.allocate(8).putLong(startSeq).array(), 0);
            List<DecodedBatch> out = new ArrayList<>();
            while (true) {
                byte[] empty = dealer.recv();
                if (empty == null) {
                    return null;
                }
                assertThat(empty).isEmpty();
                byte[] topic = dealer.recv();
                long seq = ByteBuffer.wrap(dealer.recv()).getLong();
                byte[] payload = dealer.recv();
                assertThat(dealer.hasReceiveMore()).isFalse();
                if (seq == -1) {
                    assertThat(topic).isEmpty();
                    assertThat(payload).isEmpty();
                    return out;
                }
                out.add(DecodedBatch.decode(new String(topic, StandardCharsets.UTF_8), seq, payload));
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        reader.join(5_000);
        context.close();
    }
}
