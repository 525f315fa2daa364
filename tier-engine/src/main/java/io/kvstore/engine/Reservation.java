package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import java.time.Instant;
import java.util.List;

/**
 * Slots of a memory tier set aside for blocks a peer writes one-sided, invisible to readers until
 * committed. Blocks that were already resident when the reservation was made get no slot and are
 * listed in {@code alreadyStored}, so the peer skips them.
 *
 * @param writerChecksums whether the writer must send the CRC32C of each block's bytes with its commit to be
 *     safe from a late writer of an expired reservation: always, unless the reservation is fenced and none of
 *     its slots lies where an unfenced reservation expired ({@link TierEngine#reserve(List, TierId,
 *     java.time.Duration, java.util.function.Supplier)})
 */
public record Reservation(
        String id,
        TierId tier,
        List<Slot> slots,
        List<BlockKey> alreadyStored,
        Instant expiresAt,
        boolean writerChecksums) {

    /** One reserved slot: {@code offset} bytes into the tier's registered region. */
    public record Slot(InPlaceBlock block, long offset) {}

    public Reservation {
        slots = List.copyOf(slots);
        alreadyStored = List.copyOf(alreadyStored);
    }
}
