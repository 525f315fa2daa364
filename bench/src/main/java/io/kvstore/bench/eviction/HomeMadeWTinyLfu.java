package io.kvstore.bench.eviction;

import io.kvstore.block.BlockKey;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.Predicate;

/**
 * The home-made Window TinyLFU that kvstore ran before it delegated to Caffeine, kept here only so
 * {@link EvictionHitRates} can compare the two on one trace. Window TinyLFU, the policy of Caffeine: new blocks enter a small LRU window (1% of the tier's
 * blocks); the main space is a segmented LRU (probation, then protected at 80%). Eviction weighs the
 * window's oldest block (the candidate) against main's oldest (the victim) by their estimated recent
 * frequency in a {@link FrequencySketch}: the less frequent one leaves, so a burst of one-time blocks
 * cannot flush a frequently reused prefix.
 */
public final class HomeMadeWTinyLfu implements EvictionHitRates.Subject {

    private enum Segment {
        WINDOW,
        PROBATION,
        PROTECTED
    }

    private final LinkedHashMap<BlockKey, Boolean> window = new LinkedHashMap<>(64, 0.75f, true);
    private final LinkedHashMap<BlockKey, Boolean> probation = new LinkedHashMap<>(1024, 0.75f, true);
    private final LinkedHashMap<BlockKey, Boolean> protectedSegment = new LinkedHashMap<>(1024, 0.75f, true);
    private final HashMap<BlockKey, Segment> where = new HashMap<>();
    private final HomeMadeFrequencySketch sketch = new HomeMadeFrequencySketch();

    private int windowMax() {
        return Math.max(1, where.size() / 100);
    }

    private int protectedMax() {
        return Math.max(1, (where.size() - windowMax()) * 8 / 10);
    }

    @Override
    public void onInsert(BlockKey key, BlockKey parent) {
        if (where.containsKey(key)) {
            onAccess(key);
            return;
        }
        sketch.ensureCapacity(where.size() + 1);
        sketch.increment(key);
        window.put(key, Boolean.TRUE);
        where.put(key, Segment.WINDOW);
        while (window.size() > windowMax()) {
            BlockKey eldest = window.keySet().iterator().next();
            window.remove(eldest);
            probation.put(eldest, Boolean.TRUE);
            where.put(eldest, Segment.PROBATION);
        }
    }

    @Override
    public void onAccess(BlockKey key) {
        Segment segment = where.get(key);
        if (segment == null) {
            return;
        }
        sketch.increment(key);
        switch (segment) {
            case WINDOW -> window.get(key);
            case PROTECTED -> protectedSegment.get(key);
            case PROBATION -> {
                probation.remove(key);
                protectedSegment.put(key, Boolean.TRUE);
                where.put(key, Segment.PROTECTED);
                while (protectedSegment.size() > protectedMax()) {
                    BlockKey demoted = protectedSegment.keySet().iterator().next();
                    protectedSegment.remove(demoted);
                    probation.put(demoted, Boolean.TRUE);
                    where.put(demoted, Segment.PROBATION);
                }
            }
        }
    }

    @Override
    public void onRemove(BlockKey key) {
        Segment segment = where.remove(key);
        if (segment == null) {
            return;
        }
        switch (segment) {
            case WINDOW -> window.remove(key);
            case PROBATION -> probation.remove(key);
            case PROTECTED -> protectedSegment.remove(key);
        }
    }

    @Override
    public BlockKey nextVictim(Predicate<BlockKey> evictable) {
        BlockKey candidate = first(window, evictable);
        BlockKey victim = first(probation, evictable);
        if (victim == null) {
            victim = first(protectedSegment, evictable);
        }
        if (candidate == null) {
            return victim;
        }
        if (victim == null) {
            return candidate;
        }
        // TinyLFU admission: the window's candidate enters main only if it is more frequent than main's victim.
        return sketch.frequency(candidate) > sketch.frequency(victim) ? victim : candidate;
    }

    private static BlockKey first(LinkedHashMap<BlockKey, Boolean> segment, Predicate<BlockKey> evictable) {
        for (BlockKey key : segment.keySet()) {
            if (evictable.test(key)) {
                return key;
            }
        }
        return null;
    }

    public List<BlockKey> coldestFirst() {
        List<BlockKey> keys = new ArrayList<>(where.size());
        keys.addAll(probation.keySet());
        keys.addAll(window.keySet());
        keys.addAll(protectedSegment.keySet());
        return keys;
    }

    public int size() {
        return where.size();
    }

    int frequency(BlockKey key) {
        return sketch.frequency(key);
    }
}
