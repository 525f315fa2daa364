package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import java.util.List;
import java.util.Map;

/**
 * What a commit of a {@link Reservation} did per block: now visible, found already stored by someone
 * else (the written slot was returned), or refused with the reason (its slot was returned too).
 */
public record CommitReport(List<BlockKey> committed, List<BlockKey> alreadyStored, Map<BlockKey, String> failed) {

    public CommitReport {
        committed = List.copyOf(committed);
        alreadyStored = List.copyOf(alreadyStored);
        failed = Map.copyOf(failed);
    }
}
