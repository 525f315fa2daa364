package io.kvstore.service.api;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/** The engine API's small JSON answers, one record each, so their shape is in the code and the OpenAPI. */
public final class EngineResponses {

    private EngineResponses() {}

    /** {@code GET /v1/namespaces}: every declared namespace by name. */
    public record Namespaces(Map<String, NamespaceView> namespaces) {}

    /** {@code DELETE /v1/namespaces/{ns}}: how many blocks went with the namespace. */
    public record NamespaceDeleted(String namespace, int deletedBlocks) {}

    /** {@code PUT /v1/namespaces/{ns}/blocks}: what a framed batch stored, and in which tiers. */
    public record Stored(String namespace, int storedBlocks, long bytes, Map<String, Integer> tiers) {}

    /** {@code GET /v1/leases/{id}}: a live lease and the blocks it holds. */
    public record LeaseView(String id, Instant expiresAt, List<String> blocks) {}
}
