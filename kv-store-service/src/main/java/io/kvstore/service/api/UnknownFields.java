package io.kvstore.service.api;

import io.kvstore.service.error.InvalidRequestException;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Refuses fields of a request body that kvstore does not know (collected by a {@code @JsonAnySetter}): where a
 * field feeds the block hashes, dropping a misspelt one ({@code cache_salt} for {@code cacheSalt}) would answer
 * the hashes of another request, LoRA or salt without a word.
 */
final class UnknownFields {

    private UnknownFields() {}

    /**
     * @param prefix the path of the object the fields were in, with its trailing dot ({@code "extraKeys."}), or empty
     * @param known the fields the object has, for the message
     */
    static void refuse(@Nullable Map<String, Object> unknown, String prefix, String known) {
        if (unknown != null && !unknown.isEmpty()) {
            String field = prefix + unknown.keySet().iterator().next();
            throw new InvalidRequestException(field, field + " is not a field here; the fields are " + known);
        }
    }
}
