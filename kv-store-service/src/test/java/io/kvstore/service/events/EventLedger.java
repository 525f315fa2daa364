package io.kvstore.service.events;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.TierEngine;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a router knows after applying a stream of batches in sequence order: per topic and medium, the block
 * hashes held. A second store of a held block or a removal of an unknown one is an error, unless an
 * {@code AllBlocksCleared} came before (then removals of blocks it forgot are expected, and so are stores of
 * blocks re-announced from the catalog and then reported live again).
 */
final class EventLedger {

    final Map<String, Map<String, Set<Long>>> held = new HashMap<>();
    final List<String> errors = new ArrayList<>();
    private final Set<String> cleared = new HashSet<>();
    long nextSeq;

    void apply(List<DecodedBatch> batches) {
        for (DecodedBatch b : batches) {
            if (b.seq() != nextSeq) {
                errors.add("seq " + b.seq() + " where " + nextSeq + " was due");
            }
            nextSeq = b.seq() + 1;
            Map<String, Set<Long>> topic = held.computeIfAbsent(b.topic(), t -> new HashMap<>());
            for (DecodedBatch.Event e : b.events()) {
                switch (e.type()) {
                    case "BlockStored" -> {
                        for (long h : e.hashes()) {
                            if (!topic.computeIfAbsent(e.medium(), m -> new HashSet<>())
                                            .add(h)
                                    && !cleared.contains(b.topic())) {
                                errors.add("stored twice: " + Long.toHexString(h) + " " + e.medium());
                            }
                        }
                    }
                    case "BlockRemoved" -> {
                        for (long h : e.hashes()) {
                            Set<Long> s = topic.get(e.medium());
                            if ((s == null || !s.remove(h)) && !cleared.contains(b.topic())) {
                                errors.add("removed unknown: " + Long.toHexString(h) + " " + e.medium());
                            }
                        }
                    }
                    case "AllBlocksCleared" -> {
                        topic.clear();
                        cleared.add(b.topic());
                    }
                    default -> errors.add("unknown event " + e.type());
                }
            }
        }
    }

    Set<Long> held(String topic, String medium) {
        return held.getOrDefault(topic, Map.of()).getOrDefault(medium, Set.of());
    }

    /** What the catalog holds of {@code keys} in {@code tier}, as vLLM's integer hashes. */
    static Set<Long> inCatalog(TierEngine engine, List<BlockKey> keys, String namespace, TierId tier) {
        Set<Long> out = new HashSet<>();
        for (BlockKey key : keys) {
            var info = engine.info(key);
            if (key.namespace().equals(namespace) && info != null && info.residentIn(tier)) {
                out.add(key.hash().lastLong());
            }
        }
        return out;
    }
}
