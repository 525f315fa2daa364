package io.kvstore.hashing;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a request adds to its block hashes besides token ids, so that equal tokens under a different
 * adapter, tenant, image or embedding never share blocks.
 *
 * <ul>
 *   <li>{@code loraName}: the LoRA adapter's name; null without one.
 *   <li>{@code cacheSalt}: the request's cache salt; null without one.
 *   <li>{@code more}: request-wide keys added to every block after the LoRA name (each a {@code
 *       String}, {@code Integer}, {@code Long}, {@code byte[]} or a {@code List} of these); kept for
 *       callers that build extra keys themselves. Today's engines add none.
 *   <li>{@code multimodal}: the prompt's multimodal inputs by position; vLLM schemes only.
 *   <li>{@code promptEmbeds}: for a prompt given as embeddings, the SHA-256 of each full block's slice
 *       of the embedding tensor (vLLM's {@code hashlib.sha256(tensor_data(embeds[start:end]))}), one per
 *       full block, first block first; vLLM schemes only.
 * </ul>
 *
 * <p>Empty strings are kept as given: whether {@code ""} counts as absent is each scheme's rule (vLLM
 * drops an empty cache salt but keeps an empty LoRA name; Dynamo's router drops both; KVBM v1 keeps
 * both). How each scheme folds the keys in is described on {@link VllmHasher} and {@link Xxh3Hasher}.
 */
public record ExtraKeys(
        String loraName,
        String cacheSalt,
        List<Object> more,
        List<MultimodalItem> multimodal,
        List<byte[]> promptEmbeds) {

    /** No LoRA, no salt, nothing more. */
    public static final ExtraKeys NONE = new ExtraKeys(null, null, List.of(), List.of(), List.of());

    /** The length of a prompt-embedding block hash: a SHA-256 digest. */
    public static final int PROMPT_EMBED_HASH_BYTES = 32;

    public ExtraKeys {
        requireWellFormed(loraName, "lora");
        requireWellFormed(cacheSalt, "cacheSalt");
        more = copyOfKeys(more);
        multimodal = multimodal == null ? List.of() : List.copyOf(multimodal);
        promptEmbeds = copyOfEmbeds(promptEmbeds);
    }

    /** A LoRA name, a cache salt and further request-wide keys; no multimodal inputs or embeddings. */
    public ExtraKeys(String loraName, String cacheSalt, List<Object> more) {
        this(loraName, cacheSalt, more, List.of(), List.of());
    }

    /** A LoRA name and a cache salt, either of them null when absent. */
    public static ExtraKeys of(String loraName, String cacheSalt) {
        return new ExtraKeys(loraName, cacheSalt, List.of(), List.of(), List.of());
    }

    /** Whether any key depends on the block (multimodal inputs, embeddings). */
    boolean perBlock() {
        return !multimodal.isEmpty() || !promptEmbeds.isEmpty();
    }

    private static List<Object> copyOfKeys(List<Object> more) {
        if (more == null || more.isEmpty()) {
            return List.of();
        }
        List<Object> copy = new ArrayList<>(more.size());
        for (int i = 0; i < more.size(); i++) {
            copy.add(checkedKey(more.get(i), "more[" + i + "]"));
        }
        return Collections.unmodifiableList(copy);
    }

    private static List<byte[]> copyOfEmbeds(List<byte[]> embeds) {
        if (embeds == null || embeds.isEmpty()) {
            return List.of();
        }
        List<byte[]> copy = new ArrayList<>(embeds.size());
        for (int i = 0; i < embeds.size(); i++) {
            byte[] hash = embeds.get(i);
            if (hash == null || hash.length != PROMPT_EMBED_HASH_BYTES) {
                throw new HashInputException(
                        "promptEmbeds[" + i + "]",
                        "a prompt-embedding block hash is a " + PROMPT_EMBED_HASH_BYTES + "-byte SHA-256 digest, got "
                                + (hash == null ? "null" : hash.length + " bytes"));
            }
            copy.add(hash.clone());
        }
        return Collections.unmodifiableList(copy);
    }

    private static Object checkedKey(Object key, String what) {
        switch (key) {
            case String s -> requireWellFormed(s, what);
            case Integer _, Long _ -> {}
            case byte[] b -> key = b.clone();
            case List<?> list -> {
                List<Object> copy = new ArrayList<>(list.size());
                for (int i = 0; i < list.size(); i++) {
                    copy.add(checkedKey(list.get(i), what + "[" + i + "]"));
                }
                key = Collections.unmodifiableList(copy);
            }
            case null ->
                throw new HashInputException(
                        what, "is null; extra keys are strings, integers, byte arrays or lists of these");
            default ->
                throw new HashInputException(
                        what,
                        "is a " + key.getClass().getName()
                                + "; extra keys are strings, integers, byte arrays or lists of these");
        }
        return key;
    }

    /** Every scheme hashes strings as UTF-8, which an unpaired surrogate has no encoding in. */
    static void requireWellFormed(String s, String what) {
        if (s == null) {
            return;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new HashInputException(what, "has an unpaired surrogate at index " + i + " and so no UTF-8 form");
            }
        }
    }
}
