package io.kvstore.engine;

/** A lease refused because its owner already holds as many leased blocks as it may; nothing was leased. */
public final class LeaseLimitException extends RuntimeException {

    private final String owner;
    private final long held;
    private final long limit;

    LeaseLimitException(String owner, long held, long asked, long limit) {
        super("'" + owner + "' holds " + held + " leased blocks and asked for " + asked + " more; at most " + limit
                + " at once");
        this.owner = owner;
        this.held = held;
        this.limit = limit;
    }

    public String owner() {
        return owner;
    }

    /** Leased blocks the owner held when refused. */
    public long held() {
        return held;
    }

    public long limit() {
        return limit;
    }
}
