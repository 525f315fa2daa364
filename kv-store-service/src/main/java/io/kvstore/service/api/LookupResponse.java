package io.kvstore.service.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.List;

/**
 * The answer to a lookup: how many leading blocks (and tokens) are stored, their hashes (every full
 * block's when {@code allHashes} was asked for, stored or not) and tiers, and the lease holding them when
 * one was asked for.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record LookupResponse(
        String namespace,
        int matchedBlocks,
        long matchedTokens,
        List<String> blockHashes,
        List<String> tiers,
        LeaseView lease) {

    /**
     * A lease: its id (release it with {@code DELETE /v1/leases/{id}}), expiry and the blocks it holds;
     * with the one-sided transport, where each leased block lies in the registered region, for a READ.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record LeaseView(String id, Instant expiresAt, int blocks, List<Location> locations) {}

    /**
     * Where to READ a leased block in place: its address in the registered region of {@code tier}, its
     * length, and the CRC32C its bytes must have (check it: a block is never served unverified). A block
     * held only in a tier peers cannot reach (NVMe) has no location; fetch it over HTTP.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Location(String hash, String tier, Long address, Integer length, Long crc32c) {}
}
