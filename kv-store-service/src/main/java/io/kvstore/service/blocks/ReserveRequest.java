package io.kvstore.service.blocks;

import jakarta.validation.Valid;
import jakarta.validation.constraints.NotEmpty;
import jakarta.validation.constraints.NotNull;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Slots asked for blocks the engine writes itself, over the one-sided path or the same-host file.
 *
 * @param blocks the blocks, in prompt order
 * @param timeoutSeconds how long the slots wait for the commit; default {@code kvstore.lease-timeout}
 */
public record ReserveRequest(
        @NotEmpty(message = "must list at least one block to reserve")
        List<@NotNull(message = "is required") @Valid Block> blocks,

        @Nullable Long timeoutSeconds) {

    /** One block to reserve: its hash and its parent's (absent for a prompt's first block). */
    public record Block(
            @NotNull(message = "is required") String hash,
            @Nullable String parent) {}
}
