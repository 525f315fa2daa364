package io.kvstore.service.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.List;

/**
 * The answer to a lookup: how many leading blocks (and tokens) are stored, their hashes and tiers, and
 * the lease holding them when one was asked for.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record LookupResponse(String namespace, int matchedBlocks, long matchedTokens, List<String> blockHashes,
        List<String> tiers, LeaseView lease) {

    /** A lease: its id (release it with {@code DELETE /v1/leases/{id}}), expiry and the blocks it holds. */
    public record LeaseView(String id, Instant expiresAt, int blocks) {
    }
}
