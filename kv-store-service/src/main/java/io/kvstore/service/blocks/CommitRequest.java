package io.kvstore.service.blocks;

import jakarta.validation.constraints.NotNull;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Makes reserved blocks visible once the engine has written them.
 *
 * @param reservationId what the reserve answered
 * @param crc32c per block hash, the CRC32C (unsigned 32-bit) of the bytes written; optional per block
 */
public record CommitRequest(
        @NotNull(message = "is required") String reservationId,
        @Nullable Map<String, Long> crc32c) {}
