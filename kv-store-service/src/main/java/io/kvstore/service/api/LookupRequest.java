package io.kvstore.service.api;

import com.fasterxml.jackson.annotation.JsonAnySetter;
import java.util.List;
import java.util.Map;

/**
 * {@code POST /v1/lookup}: a namespace and either the prompt's token ids (kvstore hashes them by the
 * namespace's scheme, with {@code extraKeys}) or the block hashes the engine computed (hex). With
 * {@code allHashes} the answer lists the hash of every full block of the prompt, stored or not, so a
 * client that lets kvstore do the hashing learns the keys to store under.
 */
public record LookupRequest(
        String namespace,
        int[] tokenIds,
        ExtraKeysJson extraKeys,
        List<String> blockHashes,
        Boolean lease,
        Boolean allHashes,
        @JsonAnySetter Map<String, Object> unknown) {

    /** Refuses a field kvstore does not know (a salt or LoRA at the wrong level would be left out of the hashes). */
    public void requireKnownFields() {
        UnknownFields.refuse(unknown, "", "namespace, tokenIds, extraKeys, blockHashes, lease and allHashes");
    }

    /**
     * What a request adds to its block hashes (see README "Hash schemes"): the LoRA name, the cache salt,
     * request-wide keys on every block ({@code more}), multimodal items by position, and the SHA-256 of each
     * full block's slice of the prompt embeddings (hex or base64). Any other key lands in {@code unknown} and
     * is refused: dropped, a misspelt salt or LoRA name ({@code cache_salt}) would answer the hashes without it.
     */
    public record ExtraKeysJson(
            String lora,
            String cacheSalt,
            List<Object> more,
            List<MultimodalJson> multimodal,
            List<String> promptEmbeds,
            @JsonAnySetter Map<String, Object> unknown) {}

    /** One multimodal item: the engine's identifier and its placeholder tokens {@code [offset, offset + length)}. */
    public record MultimodalJson(String identifier, Integer offset, Integer length) {}
}
