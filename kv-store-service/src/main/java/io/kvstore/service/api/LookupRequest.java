package io.kvstore.service.api;

import java.util.List;

/**
 * {@code POST /v1/lookup}: a namespace and either the prompt's token ids (kvstore hashes them by the
 * namespace's scheme, with {@code extraKeys}) or the block hashes the engine computed (hex).
 */
public record LookupRequest(
        String namespace, int[] tokenIds, ExtraKeysJson extraKeys, List<String> blockHashes, Boolean lease) {

    /** vLLM's extra keys: the LoRA name (every block), more keys (every block), the cache salt (first block). */
    public record ExtraKeysJson(String lora, String cacheSalt, List<Object> more) {}
}
