package io.kvstore.hashing;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a request adds to its block hashes besides token ids: the LoRA adapter's name (every
 * block), the cache salt (first block only) and further request-wide keys, so that equal tokens
 * under a different adapter or tenant never share blocks.
 *
 * <p>{@code loraName} and {@code cacheSalt} may be null (absent). {@code more} holds keys a vLLM
 * engine adds to every block after the LoRA name (where vLLM puts its multimodal keys); each is a
 * {@code String}, {@code Integer}, {@code Long}, {@code byte[]} or a {@code List} of these, the
 * types vLLM's CBOR hashing accepts. How each scheme folds these keys in is described on
 * {@link Sha256CborHasher} and {@link Xxh3Hasher}.
 */
public record ExtraKeys(String loraName, String cacheSalt, List<Object> more) {

    /** No LoRA, no salt, nothing more. */
    public static final ExtraKeys NONE = new ExtraKeys(null, null, List.of());

    public ExtraKeys {
        requireWellFormed(loraName, "LoRA name");
        requireWellFormed(cacheSalt, "cache salt");
        if (more == null || more.isEmpty()) {
            more = List.of();
        } else {
            List<Object> copy = new ArrayList<>(more.size());
            for (int i = 0; i < more.size(); i++) {
                copy.add(checkedKey(more.get(i), "extra key " + i));
            }
            more = Collections.unmodifiableList(copy);
        }
    }

    /** A LoRA name and a cache salt, either of them null when absent. */
    public static ExtraKeys of(String loraName, String cacheSalt) {
        return new ExtraKeys(loraName, cacheSalt, List.of());
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
                throw new IllegalArgumentException(
                        what + " is null; extra keys are strings, " + "integers, byte arrays or lists of these");
            default ->
                throw new IllegalArgumentException(
                        what + " is a " + key.getClass().getName()
                                + "; extra keys are strings, integers, byte arrays or lists of these");
        }
        return key;
    }

    /** Both schemes hash strings as UTF-8, which an unpaired surrogate has no encoding in. */
    private static void requireWellFormed(String s, String what) {
        if (s == null) {
            return;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException(
                        what + " has an unpaired surrogate at index " + i + " and so no UTF-8 form");
            }
        }
    }
}
