package io.kvstore.hashing;

/**
 * Hash inputs a scheme cannot take (a multimodal position outside the prompt, a key the scheme has no
 * place for, a seed of the wrong form), naming the input at fault so an HTTP caller can be told which
 * field to fix. {@code field} is the name within a request's extra keys ({@code "multimodal[2]"},
 * {@code "promptEmbeds"}) or {@code "seed"}.
 */
public final class HashInputException extends IllegalArgumentException {

    private final String field;
    private final String reason;

    public HashInputException(String field, String reason) {
        super(field + ": " + reason);
        this.field = field;
        this.reason = reason;
    }

    /** What is wrong, without the field's name. */
    public String reason() {
        return reason;
    }

    /** The input at fault, e.g. {@code multimodal[2]}. */
    public String field() {
        return field;
    }
}
