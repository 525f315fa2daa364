package io.kvstore.hashing;

/**
 * One multimodal input (an image, an audio clip) of a prompt: the engine's identifier for it and the
 * placeholder tokens it occupies, {@code [offset, offset + length)} in the prompt's token ids. vLLM adds
 * {@code (identifier, offset - blockStart)} to the extra keys of exactly the blocks these tokens
 * overlap (its {@code mm_features[i].identifier} and {@code mm_position}).
 */
public record MultimodalItem(String identifier, int offset, int length) {

    public MultimodalItem {
        if (identifier == null) {
            throw new IllegalArgumentException("a multimodal item needs its identifier");
        }
        ExtraKeys.requireWellFormed(identifier, "identifier");
        if (offset < 0) {
            throw new IllegalArgumentException("offset must not be negative, got " + offset);
        }
        if (length <= 0) {
            throw new IllegalArgumentException("length must be positive, got " + length);
        }
    }

    /** The first token after the item. */
    public long end() {
        return (long) offset + length;
    }
}
