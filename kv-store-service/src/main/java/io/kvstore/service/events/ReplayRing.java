package io.kvstore.service.events;

import java.util.ArrayList;
import java.util.List;

/**
 * The last {@code capacity} published batches, oldest first, for subscribers that ask for what they
 * missed. Used by the publisher thread only, so not synchronized.
 */
final class ReplayRing {

    /** One published message: its topic, sequence number and payload. */
    record Published(byte[] topic, long seq, byte[] payload) {}

    private final Published[] ring;
    private int next;
    private int size;

    ReplayRing(int capacity) {
        this.ring = new Published[capacity];
    }

    void add(Published batch) {
        ring[next] = batch;
        next = (next + 1) % ring.length;
        size = Math.min(size + 1, ring.length);
    }

    /**
     * The batches held whose sequence number is at least {@code startSeq}, in order. The start is compared
     * unsigned, as vLLM reads the request's 8 bytes: a start of 2^63 or more is past every batch.
     */
    List<Published> from(long startSeq) {
        List<Published> out = new ArrayList<>();
        int first = (next - size + ring.length) % ring.length;
        for (int i = 0; i < size; i++) {
            Published p = ring[(first + i) % ring.length];
            if (Long.compareUnsigned(p.seq(), startSeq) >= 0) {
                out.add(p);
            }
        }
        return out;
    }

    int size() {
        return size;
    }
}
