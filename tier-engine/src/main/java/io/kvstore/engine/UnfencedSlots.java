package io.kvstore.engine;

import io.kvstore.block.TierId;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The byte ranges of memory-tier slots whose reservation expired while its writer could still write unfenced,
 * each with who left it: a writer that may land a late copy there at any time, so whoever is given a slot that
 * overlaps one must not trust the bytes there to be its own writer's alone (it sends its CRC32Cs).
 *
 * <p>Who left a range is the writer the reservation was made with (what it answers: {@link WriterState}); a
 * reservation made without one (HTTP, a one-sided peer) leaves it as {@link #UNKNOWN}, never gone. A range is
 * forgotten once every writer that left it is {@link WriterState#GONE} (its client closed every connection: its
 * process writes no more), so a long-running service does not drift back to checksummed stores slot by slot.
 * Each range is kept per writer that left it (start to end, per writer), so a writer that is gone takes only its
 * own ranges along: one left at the same start by another writer, or overlapping it, stays. A writer
 * {@link WriterState#LOST} (never watched again, yet maybe still writing) hands its ranges to {@link #UNKNOWN}:
 * they stay for good, but the writer is no longer held, so a service whose clients come and go keeps at most one
 * unknown writer's range per start, not one per client.
 *
 * <p>Written only by the engine's sweep ({@link InPlaceWrites#expire}); read by every reserve and in-place fill.
 */
final class UnfencedSlots {

    /** Who left a range when no one can tell whether the writer still writes: it never counts as gone. */
    static final Supplier<WriterState> UNKNOWN = () -> WriterState.UNWATCHED;

    /** A range's start in a tier: where to find what a writer left. */
    private record Start(TierId tier, long offset) {}

    /** Per tier, by start: each writer that left a range starting there, with the range's end. */
    private final Map<TierId, ConcurrentSkipListMap<Long, Map<Supplier<WriterState>, Long>>> ranges =
            new ConcurrentHashMap<>();
    /** The starts of the ranges each writer other than {@link #UNKNOWN} left, to forget them once it is gone. */
    private final Map<Supplier<WriterState>, Set<Start>> byWriter = new ConcurrentHashMap<>();
    /** The longest range ever remembered: how far before a slot a range that overlaps it can start. */
    private volatile long longest;

    /** Remembers {@code [offset, offset + length)} of {@code tier} as left by {@code writer} (null: unknown). */
    void remember(TierId tier, long offset, int length, @Nullable Supplier<WriterState> writer) {
        Supplier<WriterState> who = writer == null ? UNKNOWN : writer;
        longest = Math.max(longest, length); // before the range shows: a reader never stops short of it
        long end = offset + length;
        if (who != UNKNOWN) {
            byWriter.computeIfAbsent(who, w -> ConcurrentHashMap.newKeySet()).add(new Start(tier, offset));
        }
        ranges.computeIfAbsent(tier, t -> new ConcurrentSkipListMap<>()).compute(offset, (start, writers) -> {
            Map<Supplier<WriterState>, Long> next = writers == null ? new HashMap<>() : new HashMap<>(writers);
            next.merge(who, end, Math::max);
            return Map.copyOf(next);
        });
    }

    /** Whether a remembered range overlaps {@code [offset, offset + length)} of {@code tier}. */
    boolean overlaps(TierId tier, long offset, int length) {
        ConcurrentSkipListMap<Long, Map<Supplier<WriterState>, Long>> inTier = ranges.get(tier);
        if (inTier == null) {
            return false;
        }
        long end = offset + length;
        long reach = longest;
        // any range that starts before this slot's end and ends after its start
        for (Map.Entry<Long, Map<Supplier<WriterState>, Long>> e :
                inTier.headMap(end).descendingMap().entrySet()) {
            for (long rangeEnd : e.getValue().values()) {
                if (rangeEnd > offset) {
                    return true;
                }
            }
            if (e.getKey() + reach <= offset) {
                return false; // no range starting this early reaches the slot
            }
        }
        return false;
    }

    /**
     * Forgets the ranges of every writer that is now gone, and hands those of every writer now lost to
     * {@link #UNKNOWN}; each other writer's stay its own. Returns how many ranges were forgotten.
     */
    int forgetGone() {
        int forgotten = 0;
        for (Supplier<WriterState> writer : byWriter.keySet()) {
            WriterState state = writer.get();
            if (state != WriterState.GONE && state != WriterState.LOST) {
                continue;
            }
            Set<Start> starts = byWriter.remove(writer);
            if (starts == null) {
                continue;
            }
            boolean gone = state == WriterState.GONE;
            for (Start s : starts) {
                ConcurrentSkipListMap<Long, Map<Supplier<WriterState>, Long>> inTier = ranges.get(s.tier());
                if (inTier != null) {
                    // in one step: a reader never sees the range missing in between
                    inTier.computeIfPresent(s.offset(), (start, writers) -> without(writers, writer, !gone));
                }
                if (gone) {
                    forgotten++;
                }
            }
        }
        return forgotten;
    }

    /** How many writers other than {@link #UNKNOWN} are held for the ranges they left. */
    int writers() {
        return byWriter.size();
    }

    /** {@code writers} less {@code ended}; its range handed to {@link #UNKNOWN} when {@code keep}. */
    private static @Nullable Map<Supplier<WriterState>, Long> without(
            Map<Supplier<WriterState>, Long> writers, Supplier<WriterState> ended, boolean keep) {
        Long end = writers.get(ended);
        if (end == null) {
            return writers;
        }
        Map<Supplier<WriterState>, Long> rest = new HashMap<>(writers);
        rest.remove(ended);
        if (keep) {
            rest.merge(UNKNOWN, end, Math::max);
        }
        return rest.isEmpty() ? null : Map.copyOf(rest);
    }
}
